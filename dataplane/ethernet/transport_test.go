package ethernet

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// fakeLink is an in-memory link: frames pushed to in are read, frames
// written are recorded.
type fakeLink struct {
	mac  transport.MAC
	mtu  int
	in   chan frame
	once sync.Once
	done chan struct{}

	mu      sync.Mutex
	sent    []frame
	dropped atomic.Uint64 // what drops reports (and resets)
}

func newFakeLink(mtu int) *fakeLink {
	return &fakeLink{mac: transport.MAC{2, 0, 0, 0, 0, 1}, mtu: mtu, in: make(chan frame, 64), done: make(chan struct{})}
}

func (l *fakeLink) readBatch(fs []frame) (int, error) {
	select {
	case <-l.done:
		return 0, os.ErrClosed
	case f := <-l.in:
		fs[0].N = copy(fs[0].Buf, f.Buf)
		fs[0].Trunc = len(f.Buf) > len(fs[0].Buf)
		fs[0].MAC, fs[0].Outgoing = f.MAC, f.Outgoing
		return 1, nil
	}
}

func (l *fakeLink) newWriter(int) frameWriter { return l }

func (l *fakeLink) writeBatch(fs []frame) (int, error) {
	select {
	case <-l.done:
		return 0, os.ErrClosed
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range fs {
		l.sent = append(l.sent, frame{Buf: append([]byte(nil), f.Buf...), MAC: f.MAC})
	}
	return len(fs), nil
}

func (l *fakeLink) frames() []frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]frame(nil), l.sent...)
}

func (l *fakeLink) drops() (uint64, error) { return l.dropped.Swap(0), nil }
func (l *fakeLink) hwAddr() transport.MAC  { return l.mac }
func (l *fakeLink) ifMTU() int             { return l.mtu }
func (l *fakeLink) index() int             { return 1 }
func (l *fakeLink) up() bool               { return true }
func (l *fakeLink) close() error           { l.once.Do(func() { close(l.done) }); return nil }

func testKey(t *testing.T) identity.PublicKey { return testKeyN(t, 0x42) }

func testKeyN(t *testing.T, b byte) identity.PublicKey {
	t.Helper()
	sk, err := identity.SecretKeyFromBytes(fill(32, b))
	if err != nil {
		t.Fatal(err)
	}
	return sk.PublicKey()
}

func fill(n int, b byte) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func startFake(t *testing.T, o Options, l *fakeLink, deliver transport.Deliver) *Transport {
	t.Helper()
	tr, err := New(7, "lan", o, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.open = func(string, uint16, int, int) (link, error) { return l, nil }
	if err := tr.Start(context.Background(), deliver); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Defaults()
	ok.Interface = "eth0"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Options){
		"no interface":   func(o *Options) { o.Interface = "" },
		"long interface": func(o *Options) { o.Interface = "abcdefghijklmnop" },
		"slash":          func(o *Options) { o.Interface = "eth0/1" },
		"ethertype":      func(o *Options) { o.EtherType = 0x05ff },
		"mtu small":      func(o *Options) { o.MTU = MinMTU - 1 },
		"mtu large":      func(o *Options) { o.MTU = MaxMTU + 1 },
		"buf":            func(o *Options) { o.RecvBufSize = -1 },
		"interval":       func(o *Options) { o.BeaconInterval = 25 * time.Hour },
	} {
		o := ok
		mod(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if got := (Options{BeaconInterval: time.Second}).beaconInterval(); got != MinBeaconInterval {
		t.Errorf("1 s interval runs at %s, want the 10 s minimum", got)
	}
	d := Defaults()
	if d.EtherType != 0x2121 || !d.Listen || d.Announce || d.AutoConnect || d.AcceptConnections || d.BeaconInterval != 30*time.Second || d.RecvBufSize != 2<<20 {
		t.Errorf("defaults differ from upstream's: %+v", d)
	}
}

func TestMTUAndAddresses(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the transports' cleanups
	o := Defaults()
	o.Interface = "veth0"
	tr, err := New(1, "", o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.MTU() != PreStartMTU || tr.LocalAddr() != "" {
		t.Fatalf("before start: mtu %d, local %q", tr.MTU(), tr.LocalAddr())
	}
	l := newFakeLink(1500)
	tr.open = func(string, uint16, int, int) (link, error) { return l, nil }
	if err := tr.Start(context.Background(), func(transport.Packet) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if tr.MTU() != 1497 || tr.LocalMAC() != l.mac {
		t.Fatalf("mtu %d mac %s, want 1497 and the link's", tr.MTU(), tr.LocalMAC())
	}
	ctx := context.Background()
	want := transport.AddrFromMAC(transport.MAC{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff})
	for _, s := range []string{"veth0/aa:bb:cc:dd:ee:ff", "AA:BB:CC:DD:EE:FF"} {
		if a, err := tr.ResolveAddr(ctx, s); err != nil || a != want {
			t.Errorf("ResolveAddr(%q) = %v, %v", s, a, err)
		}
	}
	for _, s := range []string{"eth1/aa:bb:cc:dd:ee:ff", "veth0/00:00:00:00:00:00", "veth0/aa:bb", "10.0.0.1:2121"} {
		if _, err := tr.ResolveAddr(ctx, s); !errors.Is(err, transport.ErrInvalidAddress) {
			t.Errorf("ResolveAddr(%q) = %v, want ErrInvalidAddress", s, err)
		}
	}
	var mtuErr *transport.MTUError
	if err := tr.Send(want, make([]byte, 1498)); !errors.As(err, &mtuErr) {
		t.Errorf("oversize send: %v", err)
	}
	if err := tr.Send(transport.Addr{}, []byte{1}); !errors.Is(err, transport.ErrInvalidAddress) {
		t.Errorf("send to no address: %v", err)
	}
	tr.Close()

	// A configured MTU below the interface's wins; above it, the interface's.
	for _, c := range []struct{ cfg, want int }{{1200, 1200}, {9000, 1497}} {
		o.MTU = c.cfg
		tr, _ := New(1, "", o, nil)
		tr.open = func(string, uint16, int, int) (link, error) { return newFakeLink(1500), nil }
		if err := tr.Start(context.Background(), func(transport.Packet) bool { return true }); err != nil {
			t.Fatal(err)
		}
		if tr.MTU() != c.want {
			t.Errorf("mtu %d configured: %d, want %d", c.cfg, tr.MTU(), c.want)
		}
		tr.Close()
	}
	// An interface too small for a handshake is refused.
	o.MTU = 0
	tr, _ = New(1, "", o, nil)
	tr.open = func(string, uint16, int, int) (link, error) { return newFakeLink(100), nil }
	if err := tr.Start(context.Background(), func(transport.Packet) bool { return true }); err == nil || tr.State() != transport.StateFailed {
		t.Fatalf("start on a 100-byte MTU: %v, state %s", err, tr.State())
	}
}

func TestReceiveAndBeacons(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the transports' cleanups
	key := testKey(t)
	o := Defaults()
	o.Interface, o.Announce, o.Key = "veth0", true, &key
	l := newFakeLink(1500)
	got := make(chan transport.Packet, 8)
	tr := startFake(t, o, l, func(p transport.Packet) bool { got <- p; return true })

	// The first beacon goes out at once, to broadcast, byte for byte as
	// upstream's build_beacon.
	waitFor(t, "beacon", func() bool { return tr.Stats().BeaconsSent == 1 })
	b := l.frames()[0]
	want := append([]byte{0x01, 0x01}, key[:]...)
	if b.MAC != transport.BroadcastMAC || string(b.Buf) != string(want) || tr.Stats().BeaconsSent != 1 {
		t.Fatalf("beacon to %s: %x (sent %d)", b.MAC, b.Buf, tr.Stats().BeaconsSent)
	}

	peer := transport.MAC{2, 0, 0, 0, 0, 9}
	// A data frame padded by the NIC to the Ethernet minimum.
	data := append([]byte{0x00, 0x04, 0x00, 1, 2, 3, 4}, make([]byte, 39)...)
	l.in <- frame{Buf: data, MAC: peer}
	select {
	case p := <-got:
		if string(p.Data) != "\x01\x02\x03\x04" || p.From != transport.AddrFromMAC(peer) || p.Transport != 7 || p.From.String() != "02:00:00:00:00:09" {
			t.Fatalf("delivered %+v", p)
		}
		p.Buf.Release()
	case <-time.After(5 * time.Second):
		t.Fatal("data frame not delivered")
	}

	// A beacon from a neighbour, then garbage of every kind.
	other := testKeyN(t, 0x43)
	l.in <- frame{Buf: append([]byte{0x01, 0x01}, other[:]...), MAC: peer}
	bad := [][]byte{
		{},                                      // empty
		{0x00, 0x01},                            // short header
		{0x00, 0x05, 0x00, 1, 2},                // length past the end
		{0x02, 0x00, 0x00},                      // unknown type
		{0x01, 0x01, 0x00},                      // short beacon
		append([]byte{0x01, 0x02}, other[:]...), // beacon version 2
		append([]byte{0x01, 0x01}, fill(32, 0xff)...), // not a curve point
		make([]byte, 1497+3+RecvHeadroom+1),           // oversize
	}
	for _, f := range bad {
		l.in <- frame{Buf: f, MAC: peer}
	}
	l.in <- frame{Buf: data, MAC: peer, Outgoing: true} // our own, looped back: ignored
	waitFor(t, "garbage counted", func() bool { return tr.Stats().DroppedInvalid == uint64(len(bad)) })
	st := tr.Stats()
	if st.PacketsRecv != uint64(2+len(bad)) || st.BeaconsRecv != 4 { // the good one and three bad
		t.Fatalf("stats %+v", st)
	}
	ns := tr.Discover(time.Now(), nil)
	if len(ns) != 1 || ns[0].Addr != transport.AddrFromMAC(peer) || ns[0].Key != other {
		t.Fatalf("neighbours %+v", ns)
	}
	if len(tr.Discover(time.Now(), nil)) != 0 {
		t.Fatal("discover did not drain")
	}
	select {
	case p := <-got:
		t.Fatalf("garbage delivered: %+v", p)
	default:
	}
}

func TestListenOff(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the transports' cleanups
	o := Defaults()
	o.Interface, o.Listen = "veth0", false
	l := newFakeLink(1500)
	tr := startFake(t, o, l, func(transport.Packet) bool { return true })
	k := testKey(t)
	l.in <- frame{Buf: append([]byte{0x01, 0x01}, k[:]...), MAC: transport.MAC{2, 0, 0, 0, 0, 9}}
	waitFor(t, "beacon counted", func() bool { return tr.Stats().BeaconsRecv == 1 })
	if n := tr.Discover(time.Now(), nil); len(n) != 0 || tr.Stats().DroppedInvalid != 0 {
		t.Fatalf("listen off learned %+v", n)
	}
	if len(l.frames()) != 0 {
		t.Fatal("announce off sent a beacon")
	}
	// Kernel drops are read (and reset) with each Stats and added up.
	l.dropped.Store(3)
	tr.Stats()
	l.dropped.Store(2)
	if st := tr.Stats(); st.KernelDrops != 5 {
		t.Fatalf("kernel drops %d, want 5", st.KernelDrops)
	}
}

func TestSender(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the transports' cleanups
	o := Defaults()
	o.Interface = "veth0"
	l := newFakeLink(1500)
	tr := startFake(t, o, l, func(transport.Packet) bool { return true })
	s, err := tr.NewSender()
	if err != nil {
		t.Fatal(err)
	}
	to := transport.AddrFromMAC(transport.MAC{2, 0, 0, 0, 0, 9})
	for i := range SendBatch + 3 {
		b, err := s.Reserve(to, 4)
		if err != nil {
			t.Fatal(err)
		}
		copy(b, []byte{byte(i), 2, 3, 4})
	}
	s.Flush()
	fs := l.frames()
	if len(fs) != SendBatch+3 || string(fs[5].Buf) != "\x00\x04\x00\x05\x02\x03\x04" || fs[5].MAC != to.MAC {
		t.Fatalf("%d frames, frame 5 %x to %s", len(fs), fs[5].Buf, fs[5].MAC)
	}
	if st := tr.Stats(); st.PacketsSent != uint64(SendBatch+3) || st.BytesSent != uint64(7*(SendBatch+3)) {
		t.Fatalf("stats %+v", st)
	}
	if err := tr.Send(to, []byte{9}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(to, 1498); err == nil {
		t.Fatal("oversize reserve accepted")
	}
	s.Close()
	tr.Close()
	if _, err := tr.NewSender(); !errors.Is(err, transport.ErrNotStarted) {
		t.Fatalf("sender after close: %v", err)
	}
	if err := tr.Send(to, []byte{9}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestReceiveAllocs(t *testing.T) {
	o := Defaults()
	o.Interface = "veth0"
	tr, _ := New(1, "", o, nil)
	tr.mtu.Store(1497)
	tr.bufs = transport.NewBufferPool(1497 + RecvHeadroom)
	f := frame{Buf: make([]byte, 1600), MAC: transport.MAC{2, 0, 0, 0, 0, 9}}
	f.N = copy(f.Buf, []byte{0x00, 0x04, 0x00, 1, 2, 3, 4})
	deliver := func(p transport.Packet) bool { p.Buf.Release(); return true }
	if a := testing.AllocsPerRun(100, func() { tr.handle(&f, 1600, 0, nil, deliver) }); a != 0 {
		t.Fatalf("receive allocates %v times per frame", a)
	}
	// Garbage costs no allocation either (debug off).
	for _, g := range [][]byte{{0x00, 0x09, 0x00, 1}, {0x01, 0x01, 0x00}, {0x07}} {
		g := frame{Buf: append(g, make([]byte, 8)...), N: len(g), MAC: f.MAC}
		if a := testing.AllocsPerRun(100, func() { tr.handle(&g, 1600, 0, nil, deliver) }); a != 0 {
			t.Fatalf("garbage %x allocates %v times per frame", g.Buf[:g.N], a)
		}
	}
}

// FuzzHandle: any received frame is counted once and either delivered
// (a data frame whose packet it carries), learned (a listened beacon with
// a valid key) or dropped as invalid; nothing panics.
func FuzzHandle(f *testing.F) {
	k := [32]byte{}
	copy(k[:], fill(32, 0x84))
	for _, s := range [][]byte{{0x00, 0x04, 0x00, 1, 2, 3, 4}, append([]byte{0x00, 0x04, 0x00, 1, 2, 3, 4}, make([]byte, 39)...),
		{0x00, 0x00, 0x00}, {0x00, 0xff, 0xff}, append([]byte{0x01, 0x01}, k[:]...), {0x01, 0x02}, {0x02}, {}} {
		f.Add(s)
	}
	o := Defaults()
	o.Interface = "veth0"
	tr, err := New(1, "", o, nil)
	if err != nil {
		f.Fatal(err)
	}
	tr.mtu.Store(1497)
	tr.bufs = transport.NewBufferPool(1497 + RecvHeadroom)
	buf := make([]byte, 1497+HeaderSize+RecvHeadroom+1)
	f.Fuzz(func(t *testing.T, in []byte) {
		before := tr.Stats()
		tr.Discover(time.Now(), nil)
		delivered := 0
		fr := frame{Buf: buf, MAC: transport.MAC{2, 0, 0, 0, 0, 9}}
		fr.N = copy(buf, in)
		fr.Trunc = len(in) > len(buf)
		tr.handle(&fr, len(buf)-1, 0, nil, func(p transport.Packet) bool {
			delivered++
			if len(p.Data) > len(in) {
				t.Fatalf("delivered %d bytes from a %d-byte frame", len(p.Data), len(in))
			}
			p.Buf.Release()
			return true
		})
		after := tr.Stats()
		learned := len(tr.Discover(time.Now(), nil))
		invalid := int(after.DroppedInvalid - before.DroppedInvalid)
		if after.PacketsRecv-before.PacketsRecv != 1 || delivered+learned+invalid != 1 {
			t.Fatalf("frame %x: recv +%d, delivered %d, learned %d, invalid %d", in, after.PacketsRecv-before.PacketsRecv, delivered, learned, invalid)
		}
	})
}

// With Next the transport carries upstream next's data frames beside
// master's: a version-1 packet goes out behind [0][0][len LE] (its frame
// one byte longer than a version-0 one behind [0][len LE]), received
// frames are told apart by their FMP byte, next's keyless beacons are
// counted; the MTU is the interface's minus 4.
func TestNextFrames(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	o := Defaults()
	o.Interface, o.Next = "veth0", true
	l := newFakeLink(1500)
	got := make(chan transport.Packet, 8)
	tr := startFake(t, o, l, func(p transport.Packet) bool { got <- p; return true })
	if tr.MTU() != 1496 {
		t.Fatalf("MTU %d, want 1496", tr.MTU())
	}
	s, err := tr.NewSender()
	if err != nil {
		t.Fatal(err)
	}
	to := transport.AddrFromMAC(transport.MAC{2, 0, 0, 0, 0, 9})
	v1 := append([]byte{0x11, 0, 37, 0}, fill(37, 0xab)...)
	v0 := []byte{0x00, 0x01, 2, 3}
	for _, p := range [][]byte{v1, v0, v1[:4]} {
		b, err := s.Reserve(to, len(p))
		if err != nil {
			t.Fatal(err)
		}
		copy(b, p)
	}
	big, err := s.Reserve(to, tr.MTU())
	if err != nil {
		t.Fatal(err)
	}
	copy(big, append([]byte{0x10, 0, 0, 0}, fill(tr.MTU()-4, 1)...))
	s.Flush()
	fs := l.frames()
	want := []string{
		"\x00\x00\x29\x00" + string(v1),
		"\x00\x04\x00" + string(v0),
		"\x00\x00\x04\x00" + string(v1[:4]),
	}
	if len(fs) != 4 {
		t.Fatalf("%d frames", len(fs))
	}
	for i, w := range want {
		if string(fs[i].Buf) != w {
			t.Fatalf("frame %d: %x, want %x", i, fs[i].Buf, w)
		}
	}
	if len(fs[3].Buf) != 1500 || fs[3].Buf[1] != 0 || fs[3].Buf[4] != 0x10 {
		t.Fatalf("largest v1 frame: %d bytes, header %x", len(fs[3].Buf), fs[3].Buf[:5])
	}
	if st := tr.Stats(); st.BytesSent != uint64(len(want[0])+len(want[1])+len(want[2])+1500) {
		t.Fatalf("bytes sent %d", st.BytesSent)
	}
	s.Close()

	peer := transport.MAC{2, 0, 0, 0, 0, 7}
	for _, f := range [][]byte{
		append([]byte(want[0]), make([]byte, 5)...), // padded
		[]byte(want[1]),
	} {
		l.in <- frame{Buf: f, MAC: peer}
	}
	for i, w := range [][]byte{v1, v0} {
		select {
		case p := <-got:
			if string(p.Data) != string(w) {
				t.Fatalf("packet %d delivered %x", i, p.Data)
			}
			p.Buf.Release()
		case <-time.After(5 * time.Second):
			t.Fatalf("packet %d not delivered", i)
		}
	}
	l.in <- frame{Buf: wire.AppendEthernetBeaconV1(nil), MAC: peer}
	l.in <- frame{Buf: []byte{0x00, 0x00, 0xff, 0x00, 0x11}, MAC: peer} // a v1 length past the end
	waitFor(t, "keyless beacon and bad frame", func() bool {
		st := tr.Stats()
		return st.BeaconsKeyless == 1 && st.DroppedInvalid == 1
	})
}

// TestBeaconFormats: the beacons Announce sends per Options.Beacons, in
// one batch each interval: master's 34 bytes with the key (the zero
// value, byte for byte as before), next's 5 keyless bytes, or both,
// master's first. next's need no key.
func TestBeaconFormats(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	key := testKey(t)
	master := string(append([]byte{0x01, 0x01}, key[:]...))
	next := "\x01\x00\x01\x00\x01"
	for _, c := range []struct {
		f    BeaconFormats
		key  bool
		want []string
	}{
		{0, true, []string{master}},
		{BeaconsMaster, true, []string{master}},
		{BeaconsNext, true, []string{next}},
		{BeaconsNext, false, []string{next}},
		{BeaconsBoth, true, []string{master, next}},
		{BeaconsBoth, false, []string{next}},
	} {
		o := Defaults()
		o.Interface, o.Announce, o.Beacons = "veth0", true, c.f
		if c.key {
			o.Key = &key
		}
		l := newFakeLink(1500)
		tr := startFake(t, o, l, func(p transport.Packet) bool { p.Buf.Release(); return true })
		waitFor(t, "beacons", func() bool { return tr.Stats().BeaconsSent == uint64(len(c.want)) })
		fs := l.frames()
		if len(fs) != len(c.want) {
			t.Fatalf("formats %d: %d frames", c.f, len(fs))
		}
		for i, w := range c.want {
			if string(fs[i].Buf) != w || fs[i].MAC != transport.BroadcastMAC {
				t.Fatalf("formats %d: frame %d %x to %s, want %x", c.f, i, fs[i].Buf, fs[i].MAC, w)
			}
		}
		tr.Close()
	}
	o := Defaults()
	o.Interface, o.Beacons = "veth0", 4
	if err := o.Validate(); err == nil {
		t.Fatal("beacon formats 4 accepted")
	}
}

// TestKeylessNeighbours: with Next and Listen, next's beacon hands its
// MAC to the node as a keyless neighbour; a MAC that also beacons its key
// keeps it. Without Next it is an invalid beacon, as before.
func TestKeylessNeighbours(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, next := range []bool{true, false} {
		o := Defaults()
		o.Interface, o.Next = "veth0", next
		l := newFakeLink(1500)
		tr := startFake(t, o, l, func(p transport.Packet) bool { p.Buf.Release(); return true })
		anon, both := transport.MAC{2, 0, 0, 0, 0, 1}, transport.MAC{2, 0, 0, 0, 0, 2}
		key := testKeyN(t, 0x44)
		l.in <- frame{Buf: wire.AppendEthernetBeaconV1(nil), MAC: anon}
		l.in <- frame{Buf: append([]byte{0x01, 0x01}, key[:]...), MAC: both}
		l.in <- frame{Buf: wire.AppendEthernetBeaconV1(nil), MAC: both}
		waitFor(t, "beacons", func() bool { return tr.Stats().BeaconsRecv == 3 })
		ns := tr.Discover(time.Now(), nil)
		st := tr.Stats()
		if !next {
			if len(ns) != 1 || ns[0].Keyless || st.DroppedInvalid != 2 || st.BeaconsKeyless != 0 {
				t.Fatalf("without Next: neighbours %+v, stats %+v", ns, st)
			}
			tr.Close()
			continue
		}
		if len(ns) != 2 || st.BeaconsKeyless != 2 || st.DroppedInvalid != 0 {
			t.Fatalf("neighbours %+v, stats %+v", ns, st)
		}
		if ns[0].Addr != transport.AddrFromMAC(anon) || !ns[0].Keyless {
			t.Errorf("anonymous neighbour %+v", ns[0])
		}
		if ns[1].Addr != transport.AddrFromMAC(both) || ns[1].Keyless || ns[1].Key != key {
			t.Errorf("neighbour beaconing both %+v", ns[1])
		}
		tr.Close()
	}
}
