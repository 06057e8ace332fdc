package afxdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/fips-go/fips/testing/nsthread"
	"github.com/vishvananda/netlink"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/bpf"
	"github.com/fips-go/fips/control/wire"
)

// These tests need root and fail, not skip, without it.

// veth makes a namespace with a veth pair a—b, both up, and returns the
// ifindex of each and b's MAC. The calling goroutine's thread stays in it.
func veth(t *testing.T) (int, int, net.HardwareAddr) {
	t.Helper()
	nsthread.Lock(t)
	nsthread.New(t)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "xska"}, PeerName: "xskb"}); err != nil {
		t.Fatal(err)
	}
	var idx [2]int
	var mac net.HardwareAddr
	for i, name := range []string{"xska", "xskb"} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		idx[i], mac = l.Attrs().Index, l.Attrs().HardwareAddr
	}
	return idx[0], idx[1], mac
}

// frame is an Ethernet/IPv4/UDP frame to port 2121 carrying payload.
func frame(dst net.HardwareAddr, tos uint8, payload []byte) []byte {
	b := make([]byte, 14+20+8, 14+20+8+len(payload))
	copy(b, dst)
	copy(b[6:], []byte{2, 0, 0, 0, 0, 9})
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0], ip[1], ip[8], ip[9] = 0x45, tos, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(28+len(payload)))
	copy(ip[12:], []byte{10, 9, 0, 1})
	copy(ip[16:], []byte{10, 9, 0, 2})
	binary.BigEndian.PutUint16(ip[20:], 40000)
	binary.BigEndian.PutUint16(ip[22:], 2121)
	binary.BigEndian.PutUint16(ip[24:], uint16(8+len(payload)))
	return append(b, payload...)
}

func established(t *testing.T, idx uint32, n int) []byte {
	t.Helper()
	f := wire.FMPFrame{ReceiverIndex: idx, Counter: 1, Sealed: bytes.Repeat([]byte{0xab}, n+wire.FMPTagSize)}
	b := make([]byte, f.Len())
	if _, err := f.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSocketReceivesRedirectedFrames: with xdp_fips on b and an AF_XDP
// socket bound to b's queue 0 in its slot, established frames of a known
// link sent into a arrive on the socket's RX ring byte for byte (copy
// mode: veth has no zero-copy), an unknown index is dropped in XDP and
// never seen, XDP_STATISTICS reads, and Close ends a blocked Receive.
func TestSocketReceivesRedirectedFrames(t *testing.T) {
	for _, busy := range []time.Duration{0, 200 * time.Microsecond} {
		t.Run(fmt.Sprintf("busy_poll=%v", busy), func(t *testing.T) { testReceive(t, busy) })
	}
}

// testReceive sends frames through the XDP program into a socket with
// Options.BusyPoll busy and checks that each arrives once, intact.
func testReceive(t *testing.T, busy time.Duration) {
	defer goleak.VerifyNone(t)
	a, b, macB := veth(t)
	obj, err := bpf.Load(bpf.Options{NoAttach: true})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if err := obj.SetConfig([]uint16{2121}, 10, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := obj.Attach(b, bpf.AttachNative); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Ifindex: b, Queue: 0, Frames: 64, ZeroCopy: true, BusyPoll: busy})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Statistics()
	if err != nil || st.ZeroCopy || !st.NeedWakeup {
		t.Fatalf("Statistics %+v, %v: want copy mode with need_wakeup on veth", st, err)
	}
	// As root on a kernel of 5.11 or later the socket options are taken.
	if st.KernelBusyPoll != (busy > 0) {
		t.Fatalf("kernel busy poll %v with BusyPoll %v", st.KernelBusyPoll, busy)
	}
	if err := obj.BindXSK(b, 0, 0, s.FD()); err != nil {
		t.Fatal(err)
	}
	if err := obj.AddLink(0x01020304, 0); err != nil {
		t.Fatal(err)
	}

	pk, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pk)
	send := func(f []byte) {
		t.Helper()
		if err := unix.Sendto(pk, f, 0, &unix.SockaddrLinklayer{Ifindex: a, Halen: 6, Protocol: 0x0008}); err != nil {
			t.Fatal(err)
		}
	}
	send(frame(macB, 0, established(t, 0x0a0b0c0d, 40))) // unknown index: dropped in XDP
	// Four rounds of 50 through a 64-frame UMEM: each round fits the fill
	// ring, and the frames are recycled between rounds.
	var want, got [][]byte
	// A socket that never sees the frames would block Receive: Close it
	// after a while so the test reports instead of hanging.
	timer := time.AfterFunc(10*time.Second, func() { s.Close() })
	for round := 0; round < 4; round++ {
		for i := 0; i < 50; i++ {
			k := len(want)
			f := frame(macB, uint8(k&3), established(t, 0x01020304, 10+k))
			want = append(want, f)
			send(f)
		}
		for len(got) < len(want) {
			if _, err := s.Receive(func(f []byte) { got = append(got, bytes.Clone(f)) }); err != nil {
				xs, _ := obj.Stats()
				t.Fatalf("after %d of %d frames: %v; XDP %v", len(got), len(want), err, xs)
			}
		}
	}
	timer.Stop()
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d differs:\n got %x\nwant %x", i, got[i], want[i])
		}
		d, err := ParseUDP(got[i])
		if err != nil || d.ECN != uint8(i&3) || d.DstPort != 2121 {
			t.Fatalf("frame %d: %+v, %v", i, d, err)
		}
	}
	xs, err := obj.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if n := xs[bpf.VerdictRedirect][bpf.ReasonLinkXSK].Packets; n != 200 {
		t.Errorf("XDP redirected %d, want 200", n)
	}
	if n := xs[bpf.VerdictDrop][bpf.ReasonUnknownIndex].Packets; n != 1 {
		t.Errorf("XDP dropped %d unknown-index frames, want 1", n)
	}
	st, err = s.Statistics()
	if err != nil || st.Received != 200 || st.RxDropped != 0 {
		t.Errorf("Statistics %+v, %v", st, err)
	}
	if st.BusyPollHits > st.BusyPolls || (busy == 0 && st.BusyPolls != 0) {
		t.Errorf("busy polls %d (hits %d) with BusyPoll %v", st.BusyPolls, st.BusyPollHits, busy)
	}
	t.Logf("statistics: %+v", st)

	// Close ends a Receive blocked on an empty ring.
	done := make(chan error, 1)
	go func() {
		_, err := s.Receive(func([]byte) {})
		done <- err
	}()
	if busy > 0 {
		// On the empty ring it polls before it parks.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if st, err := s.Statistics(); err == nil && st.BusyPolls > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("Receive on an empty ring did not busy-poll")
			}
		}
	}
	time.Sleep(50 * time.Millisecond) // let it block in poll; the test holds either way
	s.Close()
	select {
	case err := <-done:
		if err != ErrClosed {
			t.Errorf("Receive after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Receive")
	}
	if err := obj.UnbindXSK(b, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
}
