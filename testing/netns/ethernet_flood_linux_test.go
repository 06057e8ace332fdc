//go:build linux

package netns

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/identity"
)

// fipsEtherType is the Ethernet transport's default EtherType.
const fipsEtherType = 0x2121

// rawLink is an AF_PACKET SOCK_RAW socket opened inside a namespace,
// bound to one interface: whole Ethernet frames, header included, so
// the source MAC is the test's to choose.
type rawLink struct {
	fd      int
	ifindex int
}

// openRaw opens a raw packet socket on iface inside namespace ns. The
// socket stays in ns after the thread returns to its own namespace.
func openRaw(t *testing.T, ns, iface string) *rawLink {
	t.Helper()
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/var/run/netns", ns))
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("setns %s: %v", ns, err)
	}
	fd, ifindex, openErr := func() (int, int, error) {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return -1, 0, err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // protocol 0: send only
		if err != nil {
			return -1, 0, err
		}
		return fd, ifi.Index, nil
	}()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is stuck in ns: keep it locked so it dies with the
		// goroutine instead of running others there.
		t.Fatalf("setns back: %v", err)
	}
	runtime.UnlockOSThread()
	if openErr != nil {
		t.Fatalf("raw socket on %s in %s: %v", iface, ns, openErr)
	}
	r := &rawLink{fd: fd, ifindex: ifindex}
	t.Cleanup(func() { unix.Close(fd) })
	return r
}

// send writes one frame: dst, src, the FIPS EtherType, payload.
func (r *rawLink) send(dst, src net.HardwareAddr, payload []byte) error {
	f := make([]byte, 14+len(payload))
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], fipsEtherType)
	copy(f[14:], payload)
	sa := &unix.SockaddrLinklayer{Ifindex: r.ifindex, Halen: 6, Protocol: htons(fipsEtherType)}
	copy(sa.Addr[:], dst)
	return unix.Sendto(r.fd, f, 0, sa)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// freshMAC is a random locally administered unicast MAC.
func freshMAC(t *testing.T) net.HardwareAddr {
	mac := make(net.HardwareAddr, 6)
	if _, err := rand.Read(mac); err != nil {
		t.Fatal(err)
	}
	mac[0] = mac[0]&0xfc | 0x02
	return mac
}

// ethernetCounters are the show_transports stats of an Ethernet
// transport that these tests read.
type ethernetCounters struct {
	FramesRecv        uint64 `json:"frames_recv"`
	BeaconsRecv       uint64 `json:"beacons_recv"`
	BeaconsSent       uint64 `json:"beacons_sent"`
	BeaconsKeyless    uint64 `json:"beacons_keyless"`
	DroppedInvalid    uint64 `json:"dropped_invalid"`
	KernelDrops       uint64 `json:"kernel_drops"`
	NeighboursRefused uint64 `json:"neighbours_refused"`
}

// ethernetStatsOf is n's one Ethernet transport's counters.
func ethernetStatsOf(t *testing.T, n *Node) ethernetCounters {
	t.Helper()
	var ts struct {
		Transports []struct {
			Type  string           `json:"type"`
			Stats ethernetCounters `json:"stats"`
		} `json:"transports"`
	}
	if err := n.Call("show_transports", nil, &ts); err != nil || len(ts.Transports) != 1 || ts.Transports[0].Type != "ethernet" {
		t.Fatalf("%s show_transports: %v %+v", n.Name, err, ts)
	}
	return ts.Transports[0].Stats
}

// discoveredRefusals is n's show_status link_layer counters of dials to
// discovered strangers refused: beacon_dial_limited (the dial pace) and
// discovered_limit (the budget of handshakes in flight).
func discoveredRefusals(t *testing.T, n *Node) (paced, budget uint64) {
	t.Helper()
	var st struct {
		LinkLayer struct {
			BeaconDialLimited uint64 `json:"beacon_dial_limited"`
			DiscoveredLimit   uint64 `json:"discovered_limit"`
		} `json:"link_layer"`
	}
	if err := n.Call("show_status", nil, &st); err != nil {
		t.Fatalf("%s show_status: %v", n.Name, err)
	}
	return st.LinkLayer.BeaconDialLimited, st.LinkLayer.DiscoveredLimit
}

// garbage is the i-th junk payload: each is refused for its framing
// (an unknown type, a data frame whose header or length does not
// fit, a beacon too short, of another version or whose key is no curve
// point).
func garbage(t *testing.T, i int) []byte {
	rnd := func(n int) []byte {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	switch i % 8 {
	case 0:
		return []byte{0x00} // a data frame's type alone
	case 1, 2:
		b := rnd(1 + i%200)
		b[0] = 0x02 + b[0]%0xfe // no such frame type
		return b
	case 3:
		return []byte{0x00, 0x05}
	case 4:
		return append([]byte{0x00, 0xff, 0xff}, rnd(40)...) // length past the frame
	case 5:
		return append([]byte{0x01, 0x01}, rnd(10)...) // short beacon
	case 6:
		return append([]byte{0x01, 0x02}, rnd(32)...) // unknown beacon version
	default:
		b := []byte{0x01, 0x01}
		for range 32 {
			b = append(b, 0xff) // x ≥ p: not a point
		}
		return b
	}
}

// TestEthernetJunkAndBeaconFlood: b runs an Ethernet transport with
// listen and auto_connect on, linked to a by beacons. From a's namespace
// a raw packet socket (not the transport's code) sends b a burst of
// garbage with the FIPS EtherType, from fresh MACs and from a's own,
// then bursts of valid beacons from thousands of fresh MACs, each with a
// fresh key. b stays linked to a and a's pings by name keep being
// answered throughout; the garbage is counted as dropped_invalid; the
// neighbour buffer refuses what does not fit (neighbours_refused) and the
// dials to discovered strangers are paced (link_layer.beacon_dial_limited)
// within their budget (discovered_limit); no stranger becomes a peer.
func TestEthernetJunkAndBeaconFlood(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b := m.AddNode("a"), m.AddNode("b")
	l := m.Link(a, b)
	eth := func(iface string) string {
		return fmt.Sprintf("  ethernet:\n    lan: { interface: %s, listen: true, announce: true, auto_connect: true, accept_connections: true }\n", iface)
	}
	startConfigured(t, a, eth(l.IfA), "")
	startConfigured(t, b, eth(l.IfB), "")
	m.WaitConverged(60 * time.Second)
	bAddr := resolve(t, m, a, b)
	waitReply(t, m, a, bAddr, 15*time.Second)

	// a pings b all through the floods.
	const pings = 40
	pinged := make(chan int, 1)
	go func() {
		out, _ := m.Exec("a", "ping", "-6", "-c", fmt.Sprint(pings), "-i", "0.2", "-W", "2", bAddr)
		r := received.FindSubmatch(out)
		got := -1
		if r != nil {
			fmt.Sscan(string(r[1]), &got)
		}
		pinged <- got
	}()

	raw := openRaw(t, a.NS, l.IfA)
	bMAC, _ := net.ParseMAC(LinkMAC(l.Index, true))
	aMAC, _ := net.ParseMAC(LinkMAC(l.Index, false))
	broadcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

	// Garbage, in chunks the reader is given time to count.
	before := ethernetStatsOf(t, b)
	const junk, chunk = 2000, 100
	for sent := 0; sent < junk; {
		for range chunk {
			src := aMAC
			if sent%2 == 0 {
				src = freshMAC(t)
			}
			if err := raw.send(bMAC, src, garbage(t, sent)); err != nil {
				t.Fatalf("sending garbage frame %d: %v", sent, err)
			}
			sent++
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			s := ethernetStatsOf(t, b)
			if s.DroppedInvalid+s.KernelDrops-before.DroppedInvalid-before.KernelDrops >= uint64(sent) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %d garbage frames b counts %+v (before %+v)", sent, s, before)
			}
		}
	}
	after := ethernetStatsOf(t, b)
	invalid, lost := after.DroppedInvalid-before.DroppedInvalid, after.KernelDrops-before.KernelDrops
	if invalid < junk*9/10 {
		t.Errorf("%d garbage frames: %d counted dropped_invalid, %d kernel drops", junk, invalid, lost)
	}
	t.Logf("garbage: %d sent, dropped_invalid +%d, kernel_drops +%d", junk, invalid, lost)

	// Beacons from fresh MACs with fresh keys, in bursts past the
	// neighbour buffer's bound, until b refuses some.
	const burst = 3000
	beacons := 0
	for deadline := time.Now().Add(30 * time.Second); ethernetStatsOf(t, b).NeighboursRefused == before.NeighboursRefused; {
		if time.Now().After(deadline) {
			t.Fatalf("%d beacons from fresh MACs and no neighbour refused: %+v", beacons, ethernetStatsOf(t, b))
		}
		frames := make([][]byte, burst)
		for i := range frames {
			id, err := identity.Generate(nil)
			if err != nil {
				t.Fatal(err)
			}
			pk := id.PublicKey()
			frames[i] = append([]byte{0x01, 0x01}, pk[:]...)
		}
		for _, f := range frames {
			if err := raw.send(broadcast, freshMAC(t), f); err != nil {
				t.Fatalf("sending beacon %d: %v", beacons, err)
			}
			beacons++
		}
		// The reader has seen (or the kernel dropped) the whole burst.
		for wait := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			s := ethernetStatsOf(t, b)
			if s.BeaconsRecv+s.KernelDrops-after.BeaconsRecv-after.KernelDrops >= uint64(beacons) {
				break
			}
			if time.Now().After(wait) {
				t.Fatalf("%d beacons sent, b counts %+v (before %+v)", beacons, s, after)
			}
		}
	}
	// b dialled a few of the strangers, at the discovered-dial pace.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if paced, _ := discoveredRefusals(t, b); paced > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d discovered strangers and no dial refused for the dial pace", beacons)
		}
	}
	s := ethernetStatsOf(t, b)
	paced, budget := discoveredRefusals(t, b)
	t.Logf("beacons: %d sent, beacons_recv +%d, neighbours_refused +%d, kernel_drops +%d, beacon_dial_limited %d, discovered_limit %d",
		beacons, s.BeaconsRecv-after.BeaconsRecv, s.NeighboursRefused-before.NeighboursRefused, s.KernelDrops-after.KernelDrops,
		paced, budget)

	// Through it all b kept its one real peer and answered a.
	got := <-pinged
	if got < pings*8/10 {
		t.Errorf("a's pings to b during the floods: %d of %d answered", got, pings)
	}
	t.Logf("pings during the floods: %d of %d answered", got, pings)
	if p := peerTransports(t, b); len(p) != 1 || p[a.Npub()] != "ethernet" {
		t.Errorf("b's peers after the floods: %v, want a alone over ethernet", p)
	}
	if n := pingCount(t, m, a, bAddr, 5); n < 4 {
		t.Errorf("after the floods: %d of 5 pings answered", n)
	}
}
