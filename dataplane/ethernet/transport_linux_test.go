//go:build linux

package ethernet

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/testing/nsthread"
)

// vethPair makes veth fipse0 <-> fipse1, up, in a fresh namespace the
// test's thread is locked in, and returns the namespace.
func vethPair(t *testing.T) netns.NsHandle {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace and AF_PACKET)")
	}
	nsthread.Lock(t)
	ns := nsthread.New(t)
	addVeth(t)
	return ns
}

// addVeth makes veth fipse0 <-> fipse1, up, in the thread's namespace.
func addVeth(t *testing.T) {
	t.Helper()
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "fipse0", MTU: 1500}, PeerName: "fipse1"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"fipse0", "fipse1"} {
		l, err := netlink.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
}

// takeWorker consumes packets whose first byte is 0xEE.
type takeWorker struct {
	mu    sync.Mutex
	taken [][]byte
}

func (w *takeWorker) NewWorker() transport.DataWorker { return w }
func (w *takeWorker) Receive(_ transport.ID, _ transport.Addr, b []byte, _ int64, _ bool) bool {
	if len(b) == 0 || b[0] != 0xee {
		return false
	}
	w.mu.Lock()
	w.taken = append(w.taken, append([]byte(nil), b...))
	w.mu.Unlock()
	return true
}
func (w *takeWorker) Flush() {}
func (w *takeWorker) Close() {}
func (w *takeWorker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.taken)
}

func TestVethFramesAndBeacons(t *testing.T) {
	vethPair(t)
	defer goleak.VerifyNone(t)
	ka, kb := testKeyN(t, 0x42), testKeyN(t, 0x43)
	start := func(iface string, key identity.PublicKey, dp transport.DataPath, got chan transport.Packet) *Transport {
		o := Defaults()
		o.Interface, o.Announce, o.Key = iface, true, &key
		tr, err := New(1, "", o, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr.beaconEvery = 50 * time.Millisecond // not to wait for the 10 s minimum
		if dp != nil {
			tr.AttachDataPath(dp)
		}
		if err := tr.Start(context.Background(), func(p transport.Packet) bool {
			select {
			case got <- p:
				return true
			default:
				return false
			}
		}); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	gotA, gotB := make(chan transport.Packet, 64), make(chan transport.Packet, 64)
	w := &takeWorker{}
	a := start("fipse0", ka, nil, gotA)
	defer a.Close()
	b := start("fipse1", kb, w, gotB)
	defer b.Close()
	if a.MTU() != 1497 || a.LocalMAC().IsZero() {
		t.Fatalf("mtu %d mac %s", a.MTU(), a.LocalMAC())
	}

	// Each hears the other's first beacon, sent at start.
	// The beacon counter moves before the neighbour is stored, so wait on
	// what Discover returns, gathering across calls (each call takes).
	var na, nb []transport.Neighbour
	waitFor(t, "beacons", func() bool {
		na, nb = a.Discover(time.Now(), na), b.Discover(time.Now(), nb)
		return len(na) >= 1 && len(nb) >= 1
	})
	if a.Stats().BeaconsRecv < 1 || b.Stats().BeaconsRecv < 1 {
		t.Fatalf("beacons received: a %d, b %d", a.Stats().BeaconsRecv, b.Stats().BeaconsRecv)
	}
	na, nb = na[len(na)-1:], nb[len(nb)-1:] // one per address: the same neighbour
	if len(na) != 1 || na[0].Key != kb || na[0].Addr.MAC != b.LocalMAC() || len(nb) != 1 || nb[0].Key != ka || nb[0].Addr.MAC != a.LocalMAC() {
		t.Fatalf("a learned %+v, b learned %+v", na, nb)
	}

	recv := func(ch chan transport.Packet, want string, from transport.MAC) {
		t.Helper()
		select {
		case p := <-ch:
			if string(p.Data) != want || p.From.MAC != from {
				t.Fatalf("got %x from %s, want %x from %s", p.Data, p.From, want, from)
			}
			p.Buf.Release()
		case <-time.After(5 * time.Second):
			t.Fatalf("%x not received", want)
		}
	}
	toB, toA := transport.AddrFromMAC(b.LocalMAC()), transport.AddrFromMAC(a.LocalMAC())
	// Short packets: the frame is padded to the Ethernet minimum on the
	// wire and the length field trims it.
	if err := a.Send(toB, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	recv(gotB, "\x01\x02\x03", a.LocalMAC())
	big := string(fill(1497, 7))
	if err := b.Send(toA, []byte(big)); err != nil {
		t.Fatal(err)
	}
	recv(gotA, big, b.LocalMAC())

	// A batch through a worker's sender; B's reader is a worker and takes
	// the 0xEE ones.
	s, err := a.NewSender()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		p, err := s.Reserve(toB, 100)
		if err != nil {
			t.Fatal(err)
		}
		p[0], p[1] = 0xee, byte(i)
	}
	s.Flush()
	s.Close()
	waitFor(t, "worker batch", func() bool { return w.count() == 40 })

	// Garbage to B's MAC on the FIPS EtherType is counted and dropped.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, int(htons(DefaultEtherType)))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifi, err := netlink.LinkByName("fipse0")
	if err != nil {
		t.Fatal(err)
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(DefaultEtherType), Ifindex: ifi.Attrs().Index, Halen: 6}
	mac := b.LocalMAC()
	copy(sa.Addr[:], mac[:])
	before := b.Stats().DroppedInvalid
	garbage := [][]byte{{0x07}, {0x00, 0x09, 0x00, 1}, {0x01, 0x01, 0x02}, {0x00, 0xff}}
	for _, g := range garbage {
		if err := unix.Sendto(fd, g, 0, sa); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "garbage dropped", func() bool { return b.Stats().DroppedInvalid == before+uint64(len(garbage)) })
	select {
	case p := <-gotB:
		t.Fatalf("garbage delivered: %x", p.Data)
	default:
	}

	// Another EtherType is not ours: the transport never sees it.
	other := Defaults()
	other.Interface, other.EtherType = "fipse0", 0x88b5
	c, err := New(3, "", other, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background(), func(transport.Packet) bool { return true }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := func() uint64 { st := b.Stats(); return st.PacketsRecv - st.BeaconsRecv }
	recvBefore := data()
	if err := c.Send(toB, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(toB, []byte{4}); err != nil { // a marker on 0x2121 after it
		t.Fatal(err)
	}
	recv(gotB, "\x04", a.LocalMAC())
	if n := data() - recvBefore; n != 1 {
		t.Fatalf("b received %d frames, want only the 0x2121 marker", n)
	}
	st := a.Stats()
	if st.PacketsSent < 42 || st.SendErrors != 0 || st.BeaconsSent < 1 || st.KernelDrops != 0 {
		t.Fatalf("a stats %+v", st)
	}
}

func TestStartErrors(t *testing.T) {
	vethPair(t)
	o := Defaults()
	o.Interface = "nosuch0"
	tr, err := New(1, "", o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background(), func(transport.Packet) bool { return true }); err == nil || tr.State() != transport.StateFailed {
		t.Fatalf("start on a missing interface: %v (%s)", err, tr.State())
	}
	tr.Close()
}

// inNS opens links in ns whatever thread the caller runs on (relink runs
// on the reader's), as the daemon's process-wide namespace does.
func inNS(ns netns.NsHandle) func(string, uint16, int, int) (link, error) {
	return func(iface string, et uint16, r, w int) (link, error) {
		var l link
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if err = netns.Set(ns); err == nil {
				l, err = openLink(iface, et, r, w)
			}
		}()
		<-done
		return l, err
	}
}

// TestRelinkOnRecreatedInterface: the veth is deleted and made again
// under its names; both transports reopen their sockets on the new
// interfaces (new MACs) and frames flow again, through a sender made
// before.
func TestRelinkOnRecreatedInterface(t *testing.T) {
	ns := vethPair(t)
	defer goleak.VerifyNone(t)
	got := make(chan transport.Packet, 16)
	start := func(iface string) *Transport {
		o := Defaults()
		o.Interface = iface
		tr, err := New(1, "", o, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr.open = inNS(ns)
		if err := tr.Start(context.Background(), func(p transport.Packet) bool { got <- p; return true }); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b := start("fipse0"), start("fipse1")
	defer a.Close()
	defer b.Close()
	s, err := a.NewSender()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	send := func(p byte) {
		t.Helper()
		buf, err := s.Reserve(transport.AddrFromMAC(b.LocalMAC()), 1)
		if err != nil {
			t.Fatal(err)
		}
		buf[0] = p
		s.Flush()
	}
	recv := func(want byte) {
		t.Helper()
		select {
		case p := <-got:
			if len(p.Data) != 1 || p.Data[0] != want {
				t.Fatalf("got %x, want %02x", p.Data, want)
			}
			p.Buf.Release()
		case <-time.After(5 * time.Second):
			t.Fatalf("%02x not received", want)
		}
	}
	send(1)
	recv(1)
	// Set down and up again: the same interface, the same sockets.
	oldA, oldB := a.LocalMAC(), b.LocalMAC()
	lb, err := netlink.LinkByName("fipse1")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetDown(lb); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ENETDOWN seen", func() bool { return b.Stats().RecvErrors == 1 })
	if err := netlink.LinkSetUp(lb); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "carrier", func() bool {
		l, err := netlink.LinkByName("fipse0")
		return err == nil && l.Attrs().OperState == netlink.OperUp
	})
	send(3)
	recv(3)
	if a.LocalMAC() != oldA || b.LocalMAC() != oldB {
		t.Fatal("a link set down and up was reopened")
	}
	// Deleted and made again: new interfaces, new sockets.
	l, err := netlink.LinkByName("fipse0")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkDel(l); err != nil { // its peer goes with it
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a relink attempt or two finds nothing
	addVeth(t)
	waitFor(t, "relink", func() bool { return a.LocalMAC() != oldA && b.LocalMAC() != oldB })
	send(2)
	recv(2)
	if a.State() != transport.StateUp || a.Stats().RecvErrors == 0 {
		t.Fatalf("state %s, recv errors %d", a.State(), a.Stats().RecvErrors)
	}
}
