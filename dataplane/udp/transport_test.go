package udp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/transport/transporttest"
	"github.com/fips-go/fips/control/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = transporttest.Wait

type sink = transporttest.Sink

func newSink() *sink { return transporttest.NewSink(256) }

func loopbackOpts() Options {
	o := Defaults()
	o.BindAddr = "127.0.0.1:0"
	return o
}

func start(t *testing.T, id transport.ID, o Options, s *sink) *Transport {
	t.Helper()
	tr, err := New(id, "", o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background(), s.Deliver); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func addrOf(t *testing.T, tr *Transport) transport.Addr {
	t.Helper()
	ap, err := netip.ParseAddrPort(tr.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	return transport.AddrFromIP(ap)
}

// msg1 builds a real-looking handshake msg1.
func msg1(t *testing.T, idx uint32) []byte {
	t.Helper()
	noise := bytes.Repeat([]byte{byte(idx)}, wire.IKMsg1Size)
	b := make([]byte, wire.FMPMsg1Size)
	if _, err := (wire.FMPMsg1{SenderIndex: idx, Noise: noise}).MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDefaultsAndValidation(t *testing.T) {
	d := Defaults()
	if d.BindAddr != "0.0.0.0:2121" || d.MTU != 1280 || d.RecvBufSize != 2<<20 || d.SendBufSize != 2<<20 || !d.AcceptConnections || d.OutboundOnly {
		t.Fatalf("defaults %+v", d)
	}
	bad := []func(*Options){
		func(o *Options) { o.BindAddr = "" },
		func(o *Options) { o.BindAddr = "localhost:2121" },
		func(o *Options) { o.BindAddr = "0.0.0.0" },
		func(o *Options) { o.BindAddr = "0.0.0.0:70000" },
		func(o *Options) { o.MTU = 0 },
		func(o *Options) { o.MTU = MinMTU - 1 },
		func(o *Options) { o.MTU = MaxMTU + 1 },
		func(o *Options) { o.RecvBufSize = -1 },
	}
	for i, f := range bad {
		o := Defaults()
		f(&o)
		if _, err := New(1, "", o, nil); err == nil {
			t.Errorf("case %d: %+v accepted", i, o)
		}
	}
	o := Defaults()
	o.MTU = MinMTU
	if _, err := New(1, "", o, nil); err != nil {
		t.Errorf("mtu %d: %v", MinMTU, err)
	}
	o.MTU = MaxMTU
	o.BindAddr = "[::]:2121"
	if _, err := New(1, "", o, nil); err != nil {
		t.Errorf("mtu %d: %v", MaxMTU, err)
	}
	// A bad bind address does not matter when outbound-only.
	o = Defaults()
	o.BindAddr = "garbage"
	o.OutboundOnly = true
	if _, err := New(1, "", o, nil); err != nil {
		t.Errorf("outbound-only with bad bind: %v", err)
	}
}

func TestSendReceive(t *testing.T) {
	sa, sb := newSink(), newSink()
	a := start(t, 1, loopbackOpts(), sa)
	b := start(t, 2, loopbackOpts(), sb)
	if a.State() != transport.StateUp || a.Type() != "udp" || a.ID() != 1 {
		t.Fatalf("state %s type %s id %d", a.State(), a.Type(), a.ID())
	}

	p1 := msg1(t, 7)
	if err := a.Send(addrOf(t, b), p1); err != nil {
		t.Fatal(err)
	}
	got := sb.Next(t)
	if !bytes.Equal(got.Data, p1) || got.From != addrOf(t, a) || got.Transport != 2 {
		t.Fatalf("got %+v", got)
	}
	// The data sits in a pooled buffer the receiver releases; until then
	// the transport must not reuse it, whatever arrives meanwhile.
	if got.Buf == nil || &got.Buf.B[0] != &got.Data[0] {
		t.Fatal("delivered data is not in the packet's pooled buffer")
	}

	// Reply to the From address, and a packet of exactly MTU bytes.
	full := bytes.Repeat([]byte{0xab}, a.MTU())
	full[0] = 0
	if err := b.Send(got.From, full); err != nil {
		t.Fatal(err)
	}
	if got := sa.Next(t); !bytes.Equal(got.Data, full) || got.From != addrOf(t, b) {
		t.Fatalf("reply %d bytes from %s", len(got.Data), got.From)
	}

	st := a.Stats()
	if st.PacketsSent != 1 || st.BytesSent != uint64(len(p1)) || st.PacketsRecv != 1 || st.BytesRecv != uint64(len(full)) {
		t.Errorf("a stats %+v", st)
	}
}

// A buffer handed to the node is not reused before the node releases it,
// whatever arrives meanwhile; released ones serve later datagrams.
func TestReceiveBuffersArePooled(t *testing.T) {
	sa, sb := newSink(), newSink()
	a := start(t, 1, loopbackOpts(), sa)
	b := start(t, 2, loopbackOpts(), sb)
	var held []transport.Packet
	var sent [][]byte
	for i := range 8 {
		p := msg1(t, uint32(10+i))
		if err := a.Send(addrOf(t, b), p); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, p)
		held = append(held, sb.Next(t))
	}
	for i, p := range held {
		if !bytes.Equal(p.Data, sent[i]) {
			t.Fatalf("datagram %d changed while the node held it", i)
		}
		p.Buf.Release()
	}
}

func TestMTUExceeded(t *testing.T) {
	o := loopbackOpts()
	o.MTU = 200
	a := start(t, 1, o, newSink())
	err := a.Send(transport.AddrFromIP(netip.MustParseAddrPort("127.0.0.1:9")), make([]byte, 201))
	var me *transport.MTUError
	if !errors.As(err, &me) || me.Size != 201 || me.MTU != 200 {
		t.Fatalf("err %v", err)
	}
	if st := a.Stats(); st.MTUExceeded != 1 || st.PacketsSent != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// rawSender is a plain UDP socket for sending what a transport would not.
func rawSender(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func rawSend(t *testing.T, c *net.UDPConn, to transport.Addr, b []byte) {
	t.Helper()
	if _, err := c.WriteToUDPAddrPort(b, to.IP); err != nil {
		t.Fatal(err)
	}
}

func TestOversizeDatagramDropped(t *testing.T) {
	o := loopbackOpts()
	o.MTU = 500
	s := newSink()
	b := start(t, 1, o, s)
	raw := rawSender(t)
	to := addrOf(t, b)

	rawSend(t, raw, to, make([]byte, 500+RecvHeadroom+1)) // one past the headroom: dropped
	edge := bytes.Repeat([]byte{1}, 500+RecvHeadroom)     // exactly the headroom: delivered, as upstream
	rawSend(t, raw, to, edge)
	if got := s.Next(t); !bytes.Equal(got.Data, edge) {
		t.Fatalf("got %d bytes", len(got.Data))
	}
	rawSend(t, raw, to, make([]byte, 4000))
	marker := msg1(t, 1)
	rawSend(t, raw, to, marker)
	if got := s.Next(t); !bytes.Equal(got.Data, marker) {
		t.Fatalf("got %d bytes, want the marker", len(got.Data))
	}
	if st := b.Stats(); st.DroppedInvalid != 2 || st.PacketsRecv != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPunchPacketsFiltered(t *testing.T) {
	s := newSink()
	b := start(t, 1, loopbackOpts(), s)
	raw := rawSender(t)
	to := addrOf(t, b)

	hash := bytes.Repeat([]byte{9}, 16)
	for _, ack := range []bool{false, true} {
		p := make([]byte, wire.PunchPacketSize)
		if _, err := (wire.PunchPacket{Ack: ack, Sequence: 3, SessionHash: hash}).MarshalTo(p); err != nil {
			t.Fatal(err)
		}
		rawSend(t, raw, to, p)
	}
	// Only the magic counts, whatever follows.
	short := make([]byte, 4)
	binary.BigEndian.PutUint32(short, wire.PunchMagic)
	rawSend(t, raw, to, short)

	real := msg1(t, 2)
	rawSend(t, raw, to, real)
	if got := s.Next(t); !bytes.Equal(got.Data, real) {
		t.Fatalf("first delivered packet is %x", got.Data)
	}
	if st := b.Stats(); st.DroppedInvalid != 3 {
		t.Fatalf("stats %+v", st)
	}
	select {
	case p := <-s.C:
		t.Fatalf("unexpected packet %x", p.Data)
	default:
	}
}

func TestDeliverFalseCountsDroppedQueue(t *testing.T) {
	s := newSink()
	s.Accept = func(p transport.Packet) bool { return p.Data[len(p.Data)-1] != 0xff }
	b := start(t, 1, loopbackOpts(), s)
	a := start(t, 2, loopbackOpts(), newSink())

	refused := msg1(t, 0xff)
	if err := a.Send(addrOf(t, b), refused); err != nil {
		t.Fatal(err)
	}
	s.Next(t)
	if err := a.Send(addrOf(t, b), msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	s.Next(t) // the second Deliver ran after the first returned
	if st := b.Stats(); st.DroppedQueue != 1 || st.PacketsRecv != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestOutboundOnly(t *testing.T) {
	o := Defaults()
	o.BindAddr = "127.0.0.1:65535"
	o.OutboundOnly = true
	o.AcceptConnections = true // outbound_only wins
	s := newSink()
	a := start(t, 1, o, s)
	if a.AcceptConnections() {
		t.Fatal("outbound-only transport accepts connections")
	}
	ap, err := netip.ParseAddrPort(a.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	if !ap.Addr().IsUnspecified() || !ap.Addr().Is4() || ap.Port() == 0 || ap.Port() == 65535 {
		t.Fatalf("bound %s", ap)
	}

	// It still sends and receives replies.
	sb := newSink()
	b := start(t, 2, loopbackOpts(), sb)
	if err := a.Send(addrOf(t, b), msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	from := sb.Next(t).From
	if err := b.Send(from, msg1(t, 2)); err != nil {
		t.Fatal(err)
	}
	s.Next(t)

	o = Defaults()
	o.AcceptConnections = false
	c, _ := New(3, "", o, nil)
	if c.AcceptConnections() {
		t.Fatal("accept_connections false ignored")
	}
	if d, _ := New(4, "", Defaults(), nil); !d.AcceptConnections() {
		t.Fatal("default transport refuses connections")
	}
}

func TestIPv6(t *testing.T) {
	probe, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	probe.Close()

	// A specific IPv6 address is IPv6 only.
	o := Defaults()
	o.BindAddr = "[::1]:0"
	s6 := newSink()
	b6 := start(t, 1, o, s6)
	a6 := start(t, 2, o, newSink())
	if err := a6.Send(addrOf(t, b6), msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	if got := s6.Next(t); got.From != addrOf(t, a6) {
		t.Fatalf("from %s", got.From)
	}

	// The wildcard is dual-stack: IPv4 senders appear unmapped, and
	// replies to them go out over the same socket.
	o.BindAddr = "[::]:0"
	sd := newSink()
	d := start(t, 3, o, sd)
	port := addrOf(t, d).IP.Port()
	s4 := newSink()
	a4 := start(t, 4, loopbackOpts(), s4)
	if err := a4.Send(transport.AddrFromIP(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)), msg1(t, 2)); err != nil {
		t.Fatal(err)
	}
	got := sd.Next(t)
	if got.From != addrOf(t, a4) || !got.From.IP.Addr().Is4() {
		t.Fatalf("dual-stack from %s, want %s", got.From, addrOf(t, a4))
	}
	if err := d.Send(got.From, msg1(t, 3)); err != nil {
		t.Fatal(err)
	}
	s4.Next(t)

	// An IPv4 socket refuses IPv6 destinations locally.
	if err := a4.Send(addrOf(t, b6), msg1(t, 4)); !errors.Is(err, transport.ErrInvalidAddress) {
		t.Fatalf("v6 send from v4 socket: %v", err)
	}
}

func TestLifecycle(t *testing.T) {
	tr, err := New(1, "main", loopbackOpts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.State() != transport.StateConfigured || tr.Name() != "main" || tr.LocalAddr() != "" {
		t.Fatalf("state %s name %q local %q", tr.State(), tr.Name(), tr.LocalAddr())
	}
	to := transport.AddrFromIP(netip.MustParseAddrPort("127.0.0.1:9"))
	if err := tr.Send(to, []byte{0}); !errors.Is(err, transport.ErrNotStarted) {
		t.Fatalf("send before start: %v", err)
	}
	if err := tr.Start(context.Background(), nil); err == nil {
		t.Fatal("nil deliver accepted")
	}
	if err := tr.Start(context.Background(), newSink().Deliver); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background(), newSink().Deliver); err == nil {
		t.Fatal("second start accepted")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal("second close:", err)
	}
	if tr.State() != transport.StateDown || tr.LocalAddr() != "" {
		t.Fatalf("after close: %s %q", tr.State(), tr.LocalAddr())
	}
	if err := tr.Send(to, []byte{0}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
	if err := tr.Start(context.Background(), newSink().Deliver); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}
	goleak.VerifyNone(t)

	// A bind failure leaves the transport failed, and Close still works.
	busy, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	o := Defaults()
	o.BindAddr = busy.LocalAddr().String()
	f, _ := New(2, "", o, nil)
	if err := f.Start(context.Background(), newSink().Deliver); err == nil {
		t.Fatal("bind to a busy port succeeded")
	}
	if f.State() != transport.StateFailed {
		t.Fatalf("state %s", f.State())
	}
	f.Close()
}

func TestContextEndStops(t *testing.T) {
	tr, err := New(1, "", loopbackOpts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if err := tr.Start(ctx, newSink().Deliver); err != nil {
		t.Fatal(err)
	}
	go func() {
		tr.wg.Wait() // the receive goroutine has exited
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("receive loop still running after the context ended")
	}
	tr.Close() // waits for the AfterFunc's own Close
	if tr.State() != transport.StateDown {
		t.Fatalf("state %s", tr.State())
	}
	goleak.VerifyNone(t)
}

func TestResolveAddr(t *testing.T) {
	tr, err := New(1, "", loopbackOpts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := tr.ResolveAddr(ctx, "192.0.2.1:2121")
	if err != nil || a.String() != "192.0.2.1:2121" {
		t.Fatalf("numeric: %v %v", a, err)
	}
	a, err = tr.ResolveAddr(ctx, "[::ffff:192.0.2.1]:2121")
	if err != nil || a.String() != "192.0.2.1:2121" {
		t.Fatalf("mapped: %v %v", a, err)
	}
	// Port 0, the unspecified and multicast addresses, and IPv6 on this
	// IPv4 socket are no destination.
	for _, s := range []string{"", "192.0.2.1", "192.0.2.1:x", "192.0.2.1:70000", ":2121", "192.0.2.1:0",
		"peer.example:0", "0.0.0.0:2121", "224.0.0.1:2121", "[2001:db8::1]:2121", "[::1]:2121"} {
		if _, err := tr.ResolveAddr(ctx, s); !errors.Is(err, transport.ErrInvalidAddress) {
			t.Errorf("%q: %v", s, err)
		}
	}

	// Host names: looked up once per TTL, in the socket's family.
	r := tr.res
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	lookups := 0
	r.lookup = func(_ context.Context, network, host string) ([]netip.Addr, error) {
		lookups++
		if network != "ip4" {
			t.Errorf("lookup network %q for an IPv4 socket", network)
		}
		if host == "missing.example" {
			return nil, errors.New("no such host")
		}
		return []netip.Addr{netip.MustParseAddr("::ffff:198.51.100.7"), netip.MustParseAddr("198.51.100.8")}, nil
	}
	for range 3 {
		a, err = tr.ResolveAddr(ctx, "peer.example:2121")
		if err != nil || a.String() != "198.51.100.7:2121" {
			t.Fatalf("host: %v %v", a, err)
		}
	}
	if lookups != 1 {
		t.Fatalf("%d lookups within the TTL", lookups)
	}
	now = now.Add(dnsCacheTTL)
	if _, err := tr.ResolveAddr(ctx, "peer.example:2121"); err != nil || lookups != 2 {
		t.Fatalf("after TTL: %v, %d lookups", err, lookups)
	}
	if _, err := tr.ResolveAddr(ctx, "missing.example:1"); !errors.Is(err, transport.ErrInvalidAddress) {
		t.Fatalf("failed lookup: %v", err)
	}

	// The cache is bounded.
	for i := range dnsCacheMax + 50 {
		if _, err := tr.ResolveAddr(ctx, "h"+strconv.Itoa(i)+".example:2121"); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.cached(); n > dnsCacheMax {
		t.Fatalf("cache holds %d entries", n)
	}

	// A socket bound to a specific IPv6 address cannot reach IPv4; a
	// dual-stack one reaches both.
	for bind, want := range map[string]bool{"[::1]:0": false, "[::]:0": true} {
		r := newResolver(netip.MustParseAddrPort(bind))
		if _, err := r.resolve(ctx, "192.0.2.1:2121"); (err == nil) != want {
			t.Errorf("IPv4 destination on %s: %v", bind, err)
		}
		if _, err := r.resolve(ctx, "[2001:db8::1]:2121"); err != nil {
			t.Errorf("IPv6 destination on %s: %v", bind, err)
		}
	}

	// A link-local peer needs its interface, named or numbered, and keeps
	// it as the index; a socket bound to a link-local address lends its
	// own (issue 24). Interface 1 is loopback.
	lo, err := net.InterfaceByIndex(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ bind, addr, want string }{
		{"[::]:0", "[fe80::1%LO]:2121", "[fe80::1%1]:2121"},
		{"[::]:0", "[fe80::1%1]:2121", "[fe80::1%1]:2121"},
		{"[::]:0", "[fe80::1]:2121", ""},
		{"[::]:0", "[fe80::1%no-such-if0]:2121", ""},
		{"[::]:0", "[2001:db8::1%LO]:2121", ""},
		{"[fe80::9%LO]:0", "[fe80::1]:2121", "[fe80::1%1]:2121"},
		{"0.0.0.0:0", "[fe80::1%LO]:2121", ""},
	} {
		c.bind, c.addr = strings.ReplaceAll(c.bind, "LO", lo.Name), strings.ReplaceAll(c.addr, "LO", lo.Name)
		got, err := newResolver(netip.MustParseAddrPort(c.bind)).resolve(ctx, c.addr)
		if (c.want == "") != (err != nil) || (err == nil && got.String() != c.want) || (err != nil && !errors.Is(err, transport.ErrInvalidAddress)) {
			t.Errorf("%s on %s: %s, %v; want %q", c.addr, c.bind, got, err, c.want)
		}
	}

	// Dual-stack and IPv6 sockets ask for what they can reach.
	for bind, want := range map[string]string{"[::]:0": "ip", "[::1]:0": "ip6", "0.0.0.0:0": "ip4"} {
		if got := lookupFamily(netip.MustParseAddrPort(bind)); got != want {
			t.Errorf("%s: family %s, want %s", bind, got, want)
		}
	}
}

func TestResolveLocalhost(t *testing.T) {
	tr, err := New(1, "", loopbackOpts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	a, err := tr.ResolveAddr(ctx, "localhost:2121")
	if err != nil {
		t.Skip("localhost does not resolve here:", err)
	}
	if !a.IP.Addr().IsLoopback() || !a.IP.Addr().Is4() || a.IP.Port() != 2121 {
		t.Fatalf("localhost resolved to %s", a)
	}
}

// An adopted socket keeps its port (the NAT mapping a punch opened): the
// transport sends and receives on it, drops late punch probes, and Close
// closes it, started or not.
func TestAdopt(t *testing.T) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s, sp := newSink(), newSink()
	a, err := Adopt(5, "", conn, loopbackOpts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), s.Deliver); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.LocalAddr() != conn.LocalAddr().String() {
		t.Fatalf("adopted transport at %s, socket at %s", a.LocalAddr(), conn.LocalAddr())
	}
	peer := start(t, 6, loopbackOpts(), sp)
	late := make([]byte, wire.PunchPacketSize)
	if _, err := (wire.PunchPacket{Sequence: 9, SessionHash: bytes.Repeat([]byte{1}, 16)}).MarshalTo(late); err != nil {
		t.Fatal(err)
	}
	if err := peer.Send(addrOf(t, a), late); err != nil {
		t.Fatal(err)
	}
	p := msg1(t, 3)
	if err := peer.Send(addrOf(t, a), p); err != nil {
		t.Fatal(err)
	}
	if got := s.Next(t); !bytes.Equal(got.Data, p) || got.Transport != 5 {
		t.Fatalf("got %+v", got)
	}
	if a.Stats().DroppedInvalid != 1 {
		t.Errorf("late probe not dropped: %+v", a.Stats())
	}
	if err := a.Send(addrOf(t, peer), p); err != nil {
		t.Fatal(err)
	}
	if got := sp.Next(t); got.From != addrOf(t, a) {
		t.Errorf("reply from %s", got.From)
	}
	a.Close()
	if _, err := conn.WriteToUDP([]byte{1}, conn.LocalAddr().(*net.UDPAddr)); err == nil {
		t.Error("adopted socket still open after Close")
	}

	unstarted, _ := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	u, err := Adopt(7, "", unstarted, loopbackOpts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	u.Close()
	if _, err := unstarted.WriteToUDP([]byte{1}, unstarted.LocalAddr().(*net.UDPAddr)); err == nil {
		t.Error("never-started adopted socket not closed")
	}
}
