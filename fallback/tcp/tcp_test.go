package tcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/transport/transporttest"
	"github.com/fips-go/fips/control/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = transporttest.Wait

type sink = transporttest.Sink

func newSink() *sink { return transporttest.NewSink(512) }

// node is a transport under test with its observation channels.
type node struct {
	*Transport
	in   *sink
	down chan transport.Addr // connections torn down
}

func (n *node) nextDown(t *testing.T) transport.Addr {
	t.Helper()
	select {
	case a := <-n.down:
		return a
	case <-time.After(waitFor):
		t.Fatal("timed out waiting for a connection to close")
		return transport.Addr{}
	}
}

func (n *node) addr(t *testing.T) transport.Addr {
	t.Helper()
	ap, err := netip.ParseAddrPort(n.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	return transport.AddrFromIP(ap)
}

func listening() Options {
	o := Defaults()
	o.BindAddr = "127.0.0.1:0"
	return o
}

// newNode builds a transport; setup may adjust test seams before Start.
func newNode(t *testing.T, id transport.ID, o Options, setup func(*Transport)) *node {
	t.Helper()
	tr, err := New(id, "", o, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{Transport: tr, in: newSink(), down: make(chan transport.Addr, 512)}
	tr.onConnDown = func(a transport.Addr) { n.down <- a }
	if setup != nil {
		setup(tr)
	}
	if err := tr.Start(context.Background(), n.in.Deliver); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return n
}

// Real-looking FMP packets built with the wire encoders.

func msg1(t *testing.T, idx uint32) []byte {
	t.Helper()
	b := make([]byte, wire.FMPMsg1Size)
	if _, err := (wire.FMPMsg1{SenderIndex: idx, Noise: bytes.Repeat([]byte{byte(idx)}, wire.IKMsg1Size)}).MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if p, _ := wire.ParseFMPPrefix(b); p.Phase != wire.FMPPhaseMsg1 || p.PayloadLen != 110 {
		t.Fatalf("msg1 prefix %+v", p)
	}
	return b
}

func msg2(t *testing.T, idx uint32) []byte {
	t.Helper()
	b := make([]byte, wire.FMPMsg2Size)
	if _, err := (wire.FMPMsg2{SenderIndex: idx, ReceiverIndex: idx + 1, Noise: bytes.Repeat([]byte{0x22}, wire.IKMsg2Size)}).MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// frame is an established frame whose plaintext is plen bytes.
func frame(t *testing.T, counter uint64, plen int) []byte {
	t.Helper()
	sealed := make([]byte, plen+wire.FMPTagSize)
	for i := range sealed {
		sealed[i] = byte(i + int(counter))
	}
	f := wire.FMPFrame{Flags: wire.FMPFlagK, ReceiverIndex: 0x01020304, Counter: counter, Sealed: sealed}
	b := make([]byte, f.Len())
	if _, err := f.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ParseFMPFrame(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func allPhases(t *testing.T, mtu int) [][]byte {
	return [][]byte{
		msg1(t, 1),
		msg2(t, 2),
		frame(t, 3, 0),
		frame(t, 4, 100),
		frame(t, 5, mtu-wire.FMPFrameMinSize),
		msg1(t, 6),
	}
}

func rawDial(t *testing.T, to transport.Addr) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", to.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectClosed waits for the transport to close a raw connection.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitFor))
	var b [64]byte
	for {
		_, err := c.Read(b[:])
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return
		}
		t.Fatalf("connection not closed by the transport: %v", err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func TestDefaultsAndValidation(t *testing.T) {
	d := Defaults()
	if d.BindAddr != "" || d.MTU != 1400 || d.ConnectTimeout != 5*time.Second || !d.NoDelay ||
		d.KeepaliveSecs != 30 || d.RecvBufSize != 2<<20 || d.SendBufSize != 2<<20 || d.MaxInboundConnections != 256 {
		t.Fatalf("defaults %+v", d)
	}
	bad := []func(*Options){
		func(o *Options) { o.BindAddr = "localhost:443" },
		func(o *Options) { o.BindAddr = "0.0.0.0" },
		func(o *Options) { o.MTU = 0 },
		func(o *Options) { o.MTU = MinMTU - 1 },
		func(o *Options) { o.MTU = MaxMTU + 1 },
		func(o *Options) { o.ConnectTimeout = 0 },
		func(o *Options) { o.KeepaliveSecs = -1 },
		func(o *Options) { o.SendBufSize = -1 },
		func(o *Options) { o.MaxInboundConnections = -1 },
	}
	for i, f := range bad {
		o := Defaults()
		f(&o)
		if _, err := New(1, "", o, nil); err == nil {
			t.Errorf("case %d: %+v accepted", i, o)
		}
	}
	o := Defaults()
	o.BindAddr = "[::]:443"
	o.KeepaliveSecs = 0
	o.MaxInboundConnections = 0
	o.MTU = MinMTU
	if _, err := New(1, "", o, nil); err != nil {
		t.Fatal(err)
	}
}

func TestExchangeAllPhases(t *testing.T) {
	a := newNode(t, 1, Defaults(), nil) // outbound-only
	b := newNode(t, 2, listening(), nil)
	if a.AcceptConnections() || a.LocalAddr() != "" || !b.AcceptConnections() {
		t.Fatalf("accept: a %v %q, b %v", a.AcceptConnections(), a.LocalAddr(), b.AcceptConnections())
	}

	pkts := allPhases(t, a.MTU())
	for _, p := range pkts { // back to back, without waiting for the dial
		if err := a.Send(b.addr(t), p); err != nil {
			t.Fatal(err)
		}
	}
	var from transport.Addr
	for i, want := range pkts {
		got := b.in.Next(t)
		if !bytes.Equal(got.Data, want) || got.Transport != 2 {
			t.Fatalf("packet %d: got %x", i, got.Data)
		}
		if i == 0 {
			from = got.From
		} else if got.From != from {
			t.Fatalf("packet %d from %s, earlier from %s", i, got.From, from)
		}
	}
	if !from.IP.Addr().IsLoopback() || from.IP.Port() == 0 {
		t.Fatalf("inbound keyed by %s", from)
	}

	// The reply reuses the inbound stream.
	for _, p := range pkts {
		if err := b.Send(from, p); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range pkts {
		got := a.in.Next(t)
		if !bytes.Equal(got.Data, want) || got.From != b.addr(t) {
			t.Fatalf("reply %d: from %s, %x", i, got.From, got.Data)
		}
	}
	if got := a.LinkMTU(b.addr(t)); got != a.MTU() {
		t.Errorf("loopback link MTU %d, want %d", got, a.MTU())
	}
	if sa, sb := a.Stats(), b.Stats(); sa.ConnectionsUp != 1 || sb.ConnectionsUp != 1 || sb.ConnectsRefused != 0 {
		t.Errorf("connections: a %+v b %+v", sa, sb)
	}

	total := 0
	for _, p := range pkts {
		total += len(p)
	}
	a.Close()
	b.Close()
	for _, n := range []*node{a, b} {
		st := n.Stats()
		if st.PacketsSent != uint64(len(pkts)) || st.BytesSent != uint64(total) ||
			st.PacketsRecv != uint64(len(pkts)) || st.BytesRecv != uint64(total) ||
			st.SendErrors != 0 || st.RecvErrors != 0 || st.DroppedInvalid != 0 || st.ConnectionsUp != 0 {
			t.Errorf("transport %d stats %+v", n.ID(), st)
		}
	}
	goleak.VerifyNone(t)
}

// Frames reach the node in pooled buffers that are not reused while the
// node holds them, whatever arrives meanwhile.
func TestReceiveBuffersArePooled(t *testing.T) {
	a := newNode(t, 1, Defaults(), nil)
	b := newNode(t, 2, listening(), nil)
	pkts := allPhases(t, a.MTU())
	for _, p := range pkts {
		if err := a.Send(b.addr(t), p); err != nil {
			t.Fatal(err)
		}
	}
	var held []transport.Packet
	for range pkts {
		held = append(held, b.in.Next(t))
	}
	for i, p := range held {
		if p.Buf == nil || !bytes.Equal(p.Data, pkts[i]) {
			t.Fatalf("frame %d: pooled %v, changed while held: %v", i, p.Buf != nil, !bytes.Equal(p.Data, pkts[i]))
		}
		p.Buf.Release()
	}
}

func TestPartialWritesReassemble(t *testing.T) {
	b := newNode(t, 1, listening(), nil)
	c := rawDial(t, b.addr(t))

	pkts := allPhases(t, b.MTU())
	for _, p := range pkts[:2] { // one byte per write
		for i := range p {
			if _, err := c.Write(p[i : i+1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	var joined []byte // several packets in one write, split mid-packet
	for _, p := range pkts[2:] {
		joined = append(joined, p...)
	}
	if _, err := c.Write(joined[:50]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(joined[50:]); err != nil {
		t.Fatal(err)
	}
	for i, want := range pkts {
		if got := b.in.Next(t); !bytes.Equal(got.Data, want) || got.From.String() != c.LocalAddr().String() {
			t.Fatalf("packet %d from %s: %x", i, got.From, got.Data)
		}
	}
}

func TestFramingErrorClosesConnection(t *testing.T) {
	logs := &lockedBuffer{}
	b := newNode(t, 1, listening(), func(tr *Transport) {
		tr.log = logging.WithTarget(slog.New(logging.New(logs, logging.Options{Level: slog.LevelDebug})), "fips::transport::tcp")
	})
	m1 := msg1(t, 1)
	badLen := append([]byte{}, m1...)
	badLen[2] = 109
	tooBig := frame(t, 1, 10)
	tooBig[2], tooBig[3] = 0xff, 0x05 // payload_len 1535 > 1400-32
	cases := map[string][]byte{
		"tls client hello": {0x16, 0x03, 0x01, 0x02, 0x00, 0x01},
		"unknown phase":    {0x03, 0x00, 0x10, 0x00},
		"msg1 payload_len": badLen,
		"frame over mtu":   tooBig,
	}
	want := uint64(0)
	for name, bad := range cases {
		c := rawDial(t, b.addr(t))
		// A good packet first: the connection is admitted, then poisoned.
		if _, err := c.Write(append(append([]byte{}, m1...), bad...)); err != nil {
			t.Fatal(err)
		}
		if got := b.in.Next(t); !bytes.Equal(got.Data, m1) {
			t.Fatalf("%s: first packet %x", name, got.Data)
		}
		expectClosed(t, c)
		want++
		if st := b.Stats(); st.DroppedInvalid != want {
			t.Fatalf("%s: dropped_invalid %d, want %d", name, st.DroppedInvalid, want)
		}
		b.nextDown(t)
	}
	if st := b.Stats(); st.ConnectionsUp != 0 || st.PacketsRecv != uint64(len(cases)) {
		t.Fatalf("stats %+v", st)
	}
	// The ClientHello is logged as upstream logs it (its harness counts
	// "unknown FMP version").
	if !strings.Contains(logs.String(), "DEBUG fips::transport::tcp: TCP receive error, removing connection remote_addr=") ||
		!strings.Contains(logs.String(), " error=unknown FMP version: 1\n") {
		t.Errorf("no unknown-version line:\n%s", logs.String())
	}
}

// lockedBuffer is a log destination the transport's goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gatedDial holds every dial until gate is closed (or the dial is aborted).
func gatedDial(gate <-chan struct{}) func(*Transport) {
	return func(tr *Transport) {
		real := tr.dial
		tr.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return real(ctx, network, addr)
		}
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) transport.Addr {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return transport.AddrFromIP(ap)
}

func TestDialFailure(t *testing.T) {
	gate := make(chan struct{})
	a := newNode(t, 1, Defaults(), gatedDial(gate))
	dead := closedPort(t)

	for i := range 3 {
		if err := a.Send(dead, msg1(t, uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	if got := a.nextDown(t); got != dead {
		t.Fatalf("down %s", got)
	}
	st := a.Stats()
	if st.ConnectFailures != 1 || st.SendErrors != 3 || st.PacketsSent != 0 || st.ConnectionsUp != 0 {
		t.Fatalf("stats %+v", st)
	}

	// The next Send dials again.
	if err := a.Send(dead, msg1(t, 9)); err != nil {
		t.Fatal(err)
	}
	a.nextDown(t)
	if st := a.Stats(); st.ConnectFailures != 2 || st.SendErrors != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestQueueOverflow(t *testing.T) {
	gate := make(chan struct{}) // never opened: the dial hangs until Close
	a := newNode(t, 1, Defaults(), gatedDial(gate))
	to := transport.AddrFromIP(netip.MustParseAddrPort("127.0.0.1:9"))
	p := msg1(t, 1)
	for i := range SendQueueLen {
		if err := a.Send(to, p); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := a.Send(to, p); !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("send past the queue: %v", err)
	}
	if st := a.Stats(); st.SendErrors != 1 {
		t.Fatalf("stats %+v", st)
	}
	a.Close() // aborts the dial: not a connect failure, queued packets dropped
	if st := a.Stats(); st.ConnectFailures != 0 || st.SendErrors != 1+SendQueueLen {
		t.Fatalf("after close %+v", st)
	}
	goleak.VerifyNone(t)
}

func TestMTU(t *testing.T) {
	a := newNode(t, 1, Defaults(), nil)
	to := transport.AddrFromIP(netip.MustParseAddrPort("127.0.0.1:9"))
	err := a.Send(to, make([]byte, a.MTU()+1))
	var me *transport.MTUError
	if !errors.As(err, &me) || me.Size != a.MTU()+1 || me.MTU != a.MTU() {
		t.Fatalf("err %v", err)
	}
	if st := a.Stats(); st.MTUExceeded != 1 {
		t.Fatalf("stats %+v", st)
	}
	a.mu.RLock()
	n := len(a.conns)
	a.mu.RUnlock()
	if n != 0 {
		t.Fatal("an oversize packet started a dial")
	}
	if a.LinkMTU(to) != a.MTU() {
		t.Fatal("link MTU of an unknown address")
	}
}

func TestInboundCap(t *testing.T) {
	o := listening()
	o.MaxInboundConnections = 1
	b := newNode(t, 1, o, nil)

	c1 := rawDial(t, b.addr(t))
	if _, err := c1.Write(msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	// c1 holds the only slot, with a link on it (an unauthenticated one
	// would make room: TestFullSlotsEvictOldestUnauthenticated).
	b.Authenticated(b.in.Next(t).From)

	c2 := rawDial(t, b.addr(t))
	c2.Write(msg1(t, 2))
	expectClosed(t, c2)
	if st := b.Stats(); st.ConnectsRefused != 1 || st.ConnectionsUp != 1 {
		t.Fatalf("stats %+v", st)
	}

	// Outbound connections do not count against the cap.
	a := newNode(t, 2, listening(), nil)
	if err := b.Send(a.addr(t), msg1(t, 3)); err != nil {
		t.Fatal(err)
	}
	a.in.Next(t)

	c1.Close()
	if got := b.nextDown(t); got.String() != c1.LocalAddr().String() {
		t.Fatalf("down %s", got)
	}
	c3 := rawDial(t, b.addr(t))
	if _, err := c3.Write(msg1(t, 4)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From.String() != c3.LocalAddr().String() {
		t.Fatalf("from %s", got.From)
	}

	// A cap of zero refuses everything.
	o.MaxInboundConnections = 0
	z := newNode(t, 3, o, nil)
	c4 := rawDial(t, z.addr(t))
	expectClosed(t, c4)
	if st := z.Stats(); st.ConnectsRefused != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFirstFrameDeadline(t *testing.T) {
	b := newNode(t, 1, listening(), func(tr *Transport) { tr.firstFrameTimeout = 100 * time.Millisecond })

	// talker completes a frame in time; its deadline is then lifted.
	talker := rawDial(t, b.addr(t))
	if _, err := talker.Write(msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	b.in.Next(t)
	// A silent socket, opened after the talker, loses its slot: by then
	// the talker's deadline would have fired too, had it been kept.
	silent := rawDial(t, b.addr(t))
	expectClosed(t, silent)
	if got := b.nextDown(t); got.String() != silent.LocalAddr().String() {
		t.Fatalf("down %s", got)
	}
	// A first frame started in time but not finished is dropped as well.
	drip := rawDial(t, b.addr(t))
	if _, err := drip.Write(msg1(t, 2)[:10]); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, drip)
	b.nextDown(t)

	if _, err := talker.Write(frame(t, 1, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From.String() != talker.LocalAddr().String() {
		t.Fatalf("from %s", got.From)
	}
	if st := b.Stats(); st.RecvErrors != 0 || st.DroppedInvalid != 0 || st.ConnectionsUp != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCloseConnection(t *testing.T) {
	a := newNode(t, 1, Defaults(), nil)
	b := newNode(t, 2, listening(), nil)
	if err := a.Send(b.addr(t), msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	first := b.in.Next(t).From

	a.CloseConnection(b.addr(t))
	if got := a.nextDown(t); got != b.addr(t) {
		t.Fatalf("a down %s", got)
	}
	if got := b.nextDown(t); got != first {
		t.Fatalf("b down %s", got)
	}
	a.CloseConnection(b.addr(t)) // nothing left: no-op

	// The next Send reconnects.
	if err := a.Send(b.addr(t), msg1(t, 2)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From == first {
		t.Fatal("reused a closed connection")
	}
	if st := a.Stats(); st.RecvErrors != 0 || st.SendErrors != 0 || st.ConnectionsUp != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDeliverFalseCountsDroppedQueue(t *testing.T) {
	b := newNode(t, 1, listening(), nil)
	b.in.Accept = func(p transport.Packet) bool { return p.Data[4] != 0xff }
	c := rawDial(t, b.addr(t))
	c.Write(append(msg1(t, 0xff), msg1(t, 1)...))
	b.in.Next(t)
	b.in.Next(t) // the second Deliver ran after the first returned
	if st := b.Stats(); st.DroppedQueue != 1 || st.PacketsRecv != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLifecycle(t *testing.T) {
	tr, err := New(1, "main", listening(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.State() != transport.StateConfigured || tr.Name() != "main" || tr.Type() != "tcp" || tr.ID() != 1 {
		t.Fatalf("%s %q %s %d", tr.State(), tr.Name(), tr.Type(), tr.ID())
	}
	to := transport.AddrFromIP(netip.MustParseAddrPort("127.0.0.1:9"))
	if err := tr.Send(to, msg1(t, 1)); !errors.Is(err, transport.ErrNotStarted) {
		t.Fatalf("send before start: %v", err)
	}
	if err := tr.Send(transport.Addr{}, msg1(t, 1)); !errors.Is(err, transport.ErrInvalidAddress) {
		t.Fatalf("send to zero address: %v", err)
	}
	if err := tr.Start(context.Background(), nil); err == nil {
		t.Fatal("nil deliver accepted")
	}
	if err := tr.Start(context.Background(), newSink().Deliver); err != nil {
		t.Fatal(err)
	}
	if tr.State() != transport.StateUp || tr.LocalAddr() == "" {
		t.Fatalf("%s %q", tr.State(), tr.LocalAddr())
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
		t.Fatalf("after close %s %q", tr.State(), tr.LocalAddr())
	}
	if err := tr.Send(to, msg1(t, 1)); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
	if err := tr.Start(context.Background(), newSink().Deliver); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}

	// A busy port fails Start; Close still works.
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	o := Defaults()
	o.BindAddr = busy.Addr().String()
	f, _ := New(2, "", o, nil)
	if err := f.Start(context.Background(), newSink().Deliver); err == nil || f.State() != transport.StateFailed {
		t.Fatalf("start on a busy port: %v, %s", err, f.State())
	}
	f.Close()
	goleak.VerifyNone(t)
}

// TestCloseWithTraffic closes transports with established connections,
// queued packets and a dial in flight, then checks nothing is left running.
func TestCloseWithTraffic(t *testing.T) {
	gate := make(chan struct{})
	a := newNode(t, 1, listening(), nil)
	b := newNode(t, 2, listening(), nil)
	c := newNode(t, 3, Defaults(), gatedDial(gate))
	for _, from := range []*node{a, b} {
		for _, to := range []*node{a, b} {
			if from != to {
				for i := range 10 {
					if err := from.Send(to.addr(t), frame(t, uint64(i), 200)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	a.in.Next(t)
	b.in.Next(t)
	if err := c.Send(a.addr(t), msg1(t, 1)); err != nil { // dial held at the gate
		t.Fatal(err)
	}
	raw := rawDial(t, a.addr(t)) // an inbound connection still in its first-frame wait
	_ = raw
	for _, n := range []*node{a, b, c} {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if st := n.Stats(); st.ConnectionsUp != 0 {
			t.Fatalf("transport %d: %d connections after Close", n.ID(), st.ConnectionsUp)
		}
	}
	goleak.VerifyNone(t)
}

func TestContextEndStops(t *testing.T) {
	tr, err := New(1, "", listening(), nil)
	if err != nil {
		t.Fatal(err)
	}
	down := make(chan transport.Addr, 4)
	tr.onConnDown = func(a transport.Addr) { down <- a }
	in := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	if err := tr.Start(ctx, in.Deliver); err != nil {
		t.Fatal(err)
	}
	c := rawDial(t, transport.AddrFromIP(netip.MustParseAddrPort(tr.LocalAddr())))
	c.Write(msg1(t, 1))
	in.Next(t)
	cancel()
	expectClosed(t, c) // the context's end closed the connection
	tr.Close()
	if tr.State() != transport.StateDown {
		t.Fatalf("state %s", tr.State())
	}
	goleak.VerifyNone(t)
}

func TestIPv6DualStackListener(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		ln.Close()
	}
	o := Defaults()
	o.BindAddr = "[::]:0"
	b := newNode(t, 1, o, nil)
	port := b.addr(t).IP.Port()
	for _, ip := range []string{"127.0.0.1", "::1"} {
		a := newNode(t, 2, Defaults(), nil)
		to := transport.AddrFromIP(netip.AddrPortFrom(netip.MustParseAddr(ip), port))
		if err := a.Send(to, msg1(t, 1)); err != nil {
			t.Fatal(err)
		}
		got := b.in.Next(t)
		if got.From.IP.Addr().String() != ip {
			t.Fatalf("from %s, want %s (unmapped)", got.From, ip)
		}
		if err := b.Send(got.From, msg2(t, 1)); err != nil {
			t.Fatal(err)
		}
		if r := a.in.Next(t); r.From != to {
			t.Fatalf("reply from %s", r.From)
		}
	}
}

func TestResolveAddr(t *testing.T) {
	tr, err := New(1, "", Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for in, want := range map[string]string{
		"192.0.2.1:443":          "192.0.2.1:443",
		"[2001:db8::1]:443":      "[2001:db8::1]:443",
		"[::ffff:192.0.2.1]:443": "192.0.2.1:443",
		"[fe80::1%1]:443":        "[fe80::1%1]:443", // interface 1: loopback
	} {
		if a, err := tr.ResolveAddr(ctx, in); err != nil || a.String() != want {
			t.Errorf("%s: %v %v", in, a, err)
		}
	}
	// A link-local address needs its interface; only it takes one.
	for _, s := range []string{"", "192.0.2.1", "192.0.2.1:https", "192.0.2.1:70000", ":443",
		"[fe80::1]:443", "[fe80::1%no-such-if0]:443", "[2001:db8::1%1]:443"} {
		if _, err := tr.ResolveAddr(ctx, s); !errors.Is(err, transport.ErrInvalidAddress) {
			t.Errorf("%q: %v", s, err)
		}
	}
	if a, err := tr.ResolveAddr(ctx, "localhost:443"); err == nil {
		if !a.IP.Addr().IsLoopback() || a.IP.Port() != 443 {
			t.Errorf("localhost: %s", a)
		}
	}
}

// TestIdleInboundConnectionsFreed: connections that each send one
// 52-byte frame and go idle used to hold every inbound slot for good. Now
// an inbound connection on which the node authenticates no link within
// the deadline is closed, and counted; one it authenticated stays.
func TestIdleInboundConnectionsFreed(t *testing.T) {
	o := listening()
	o.MaxInboundConnections = 8
	o.MaxInboundPerSource = 16 // every connection here is from 127.0.0.1
	b := newNode(t, 1, o, func(tr *Transport) { tr.unauthTimeout = 300 * time.Millisecond })
	f := frame(t, 1, 20)
	if len(f) != 52 {
		t.Fatalf("frame is %d bytes", len(f))
	}
	// One genuine peer whose link the node authenticates.
	good := rawDial(t, b.addr(t))
	if _, err := good.Write(f); err != nil {
		t.Fatal(err)
	}
	b.Authenticated(b.in.Next(t).From)
	var idle []net.Conn
	for range 7 {
		c := rawDial(t, b.addr(t))
		if _, err := c.Write(f); err != nil {
			t.Fatal(err)
		}
		b.in.Next(t)
		idle = append(idle, c)
	}
	// Every slot is held: a newcomer takes the oldest idle one's, and is
	// itself closed in time like the rest.
	newcomer := rawDial(t, b.addr(t))
	expectClosed(t, idle[0])
	idle = append(idle[1:], newcomer)
	for _, c := range idle {
		expectClosed(t, c)
	}
	for range 8 {
		b.nextDown(t)
	}
	if got := b.UnauthenticatedClosed(); got != 7 || b.Stats().UnauthenticatedClosed != 7 {
		t.Errorf("closed as unauthenticated %d, want 7", got)
	}
	if got := b.Stats().UnauthenticatedEvicted; got != 1 {
		t.Errorf("evicted %d, want 1", got)
	}
	// The slots are free again, and the authenticated one still works.
	late := rawDial(t, b.addr(t))
	if _, err := late.Write(f); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From.String() != late.LocalAddr().String() {
		t.Fatalf("from %s", got.From)
	}
	if _, err := good.Write(frame(t, 2, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From.String() != good.LocalAddr().String() {
		t.Fatalf("from %s", got.From)
	}
	if st := b.Stats(); st.ConnectsRefused != 0 || st.ConnectionsUp != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestCloseConnectionWritesQueueFirst: a peer removed right after a
// Disconnect was queued still gets the Disconnect before its connection
// closes.
func TestCloseConnectionWritesQueueFirst(t *testing.T) {
	a := newNode(t, 1, Defaults(), nil)
	b := newNode(t, 2, listening(), nil)
	if err := a.Send(b.addr(t), msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	b.in.Next(t)
	for i := range 20 {
		if err := a.Send(b.addr(t), frame(t, uint64(10+i), 100)); err != nil {
			t.Fatal(err)
		}
	}
	a.CloseConnection(b.addr(t))
	for i := range 20 {
		got := b.in.Next(t)
		if f, err := wire.ParseFMPFrame(got.Data); err != nil || f.Counter != uint64(10+i) {
			t.Fatalf("packet %d after CloseConnection: %v %+v", i, err, f)
		}
	}
	a.nextDown(t)
	b.nextDown(t)
	if st := a.Stats(); st.SendErrors != 0 || st.ConnectionsUp != 0 {
		t.Errorf("stats %+v", st)
	}
}

// dialFrom is rawDial from a chosen loopback address.
func dialFrom(t *testing.T, from string, to transport.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", to.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFullSlotsEvictOldestUnauthenticated: with every slot held, a new
// connection closes the oldest one on which no link authenticated,
// rather than being refused — so connections that each send one frame
// and idle cannot keep genuine peers out for good. Only when every slot
// carries an authenticated link is a newcomer refused.
func TestFullSlotsEvictOldestUnauthenticated(t *testing.T) {
	o := listening()
	o.MaxInboundConnections = 4
	o.MaxInboundPerSource = 8
	b := newNode(t, 1, o, nil) // unauthenticated deadline 30 s: never reached here
	good := rawDial(t, b.addr(t))
	if _, err := good.Write(frame(t, 1, 20)); err != nil {
		t.Fatal(err)
	}
	b.Authenticated(b.in.Next(t).From)
	var idle []net.Conn
	for i := range 3 {
		c := rawDial(t, b.addr(t))
		if _, err := c.Write(frame(t, uint64(10+i), 20)); err != nil {
			t.Fatal(err)
		}
		b.in.Next(t)
		idle = append(idle, c)
	}
	newcomer := rawDial(t, b.addr(t))
	if _, err := newcomer.Write(frame(t, 20, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From.String() != newcomer.LocalAddr().String() {
		t.Fatalf("from %s, want the newcomer %s", got.From, newcomer.LocalAddr())
	}
	expectClosed(t, idle[0])
	if got := b.nextDown(t); got.String() != idle[0].LocalAddr().String() {
		t.Fatalf("closed %s, want the oldest unauthenticated %s", got, idle[0].LocalAddr())
	}
	if st := b.Stats(); st.UnauthenticatedEvicted != 1 || st.ConnectsRefused != 0 || st.ConnectionsUp != 4 {
		t.Fatalf("stats %+v", st)
	}
	// The authenticated connection was never a candidate.
	if _, err := good.Write(frame(t, 2, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From.String() != good.LocalAddr().String() {
		t.Fatalf("from %s", got.From)
	}
	// Every slot authenticated: the next newcomer is refused.
	for _, c := range append(idle[1:], newcomer) {
		b.Authenticated(transport.AddrFromIP(netip.MustParseAddrPort(c.LocalAddr().String())))
	}
	late := rawDial(t, b.addr(t))
	expectClosed(t, late)
	if st := b.Stats(); st.UnauthenticatedEvicted != 1 || st.ConnectsRefused != 1 || st.ConnectionsUp != 4 {
		t.Fatalf("stats %+v", st)
	}
}

// TestInboundShareOfOneSource: one source (an IPv4 address here) holds at
// most its share of the inbound slots (by default a quarter, at least 8),
// so a single host cannot take them all; other sources still get in.
// With its share all authenticated, its newcomers are refused.
func TestInboundShareOfOneSource(t *testing.T) {
	for _, c := range []struct{ max, per, want int }{{256, 0, 64}, {64, 0, 16}, {8, 0, 8}, {5, 0, 8}, {256, 3, 3}} {
		if got := (Options{MaxInboundConnections: c.max, MaxInboundPerSource: c.per}).perSourceLimit(); got != c.want {
			t.Errorf("share of %d slots (per-source %d) = %d, want %d", c.max, c.per, got, c.want)
		}
	}
	o := listening()
	o.MaxInboundConnections = 8
	o.MaxInboundPerSource = 2
	b := newNode(t, 1, o, nil)
	for i := range 2 {
		c := dialFrom(t, "127.0.0.2", b.addr(t))
		if _, err := c.Write(frame(t, uint64(i), 20)); err != nil {
			t.Fatal(err)
		}
		// Authenticated: an unauthenticated one would make room for its
		// own source's newcomer (TestEvictionOrder).
		b.Authenticated(b.in.Next(t).From)
	}
	third := dialFrom(t, "127.0.0.2", b.addr(t))
	expectClosed(t, third)
	other := dialFrom(t, "127.0.0.3", b.addr(t))
	if _, err := other.Write(frame(t, 9, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From.String() != other.LocalAddr().String() {
		t.Fatalf("from %s", got.From)
	}
	if st := b.Stats(); st.InboundSourceRefused != 1 || st.ConnectsRefused != 1 || st.ConnectionsUp != 3 || st.UnauthenticatedEvicted != 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, c := range []struct {
		a    string
		want string
	}{{"192.0.2.7", "192.0.2.7/32"}, {"::ffff:192.0.2.7", "192.0.2.7/32"}, {"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"}} {
		if got := sourceOf(netip.MustParseAddr(c.a)).String(); got != c.want {
			t.Errorf("source of %s = %s, want %s", c.a, got, c.want)
		}
	}
}

// TestReplyDoesNotDial: a msg2 only ever answers a msg1 that came in on a
// connection, and goes back on it. With that connection gone, the reply
// used to start a dial to the address — an initiator's source address
// and port, which it chooses — so a stranger sending msg1s and hanging
// up had the node open outbound connections of its choosing, each held
// with no deadline. Now it is refused; a msg1 still dials.
func TestReplyDoesNotDial(t *testing.T) {
	b := newNode(t, 1, Defaults(), nil) // outbound only
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	to := transport.AddrFromIP(netip.MustParseAddrPort(ln.Addr().String()))
	if err := b.Send(to, msg2(t, 1)); !errors.Is(err, transport.ErrNoConnection) {
		t.Fatalf("msg2 to an address with no connection: %v", err)
	}
	if st := b.Stats(); st.ReplyDialsRefused != 1 || st.ConnectionsEstablished != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A msg1 dials, and is the first thing the listener sees.
	if err := b.Send(to, msg1(t, 2)); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(waitFor))
	got := make([]byte, wire.FMPMsg1Size)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg1(t, 2)) {
		t.Fatalf("first bytes on the connection %x", got[:8])
	}
}

// addrOf is the transport address of the remote end of our c.
func addrOf(c net.Conn) transport.Addr {
	return transport.AddrFromIP(netip.MustParseAddrPort(c.LocalAddr().String()))
}

// TestEvictionOrder: with every slot held, a newcomer closes the oldest
// connection the node never answered, even when older answered ones
// exist: a genuine peer whose msg1 was answered is out of reach of
// connections that send nothing valid. With the newcomer's source at its
// share, that source's own unauthenticated connection makes room.
func TestEvictionOrder(t *testing.T) {
	o := listening()
	o.MaxInboundConnections = 3
	o.MaxInboundPerSource = 2
	b := newNode(t, 1, o, nil)

	// The genuine peer, first in, answered; then two strangers.
	genuine := dialFrom(t, "127.0.0.2", b.addr(t))
	if _, err := genuine.Write(msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(b.in.Next(t).From, msg2(t, 1)); err != nil {
		t.Fatal(err)
	}
	var strangers []net.Conn
	for i, from := range []string{"127.0.0.3", "127.0.0.4"} {
		c := dialFrom(t, from, b.addr(t))
		if _, err := c.Write(frame(t, uint64(i), 20)); err != nil {
			t.Fatal(err)
		}
		b.in.Next(t)
		strangers = append(strangers, c)
	}
	// Full: the newcomer evicts the oldest unanswered, not the genuine.
	n1 := dialFrom(t, "127.0.0.5", b.addr(t))
	expectClosed(t, strangers[0])
	if got := b.nextDown(t); got != addrOf(strangers[0]) {
		t.Fatalf("evicted %s, want %s", got, strangers[0].LocalAddr())
	}
	if _, err := n1.Write(frame(t, 9, 20)); err != nil {
		t.Fatal(err)
	}
	b.in.Next(t)
	n2 := dialFrom(t, "127.0.0.6", b.addr(t))
	expectClosed(t, strangers[1])
	b.nextDown(t)
	n3 := dialFrom(t, "127.0.0.7", b.addr(t))
	expectClosed(t, n1)
	b.nextDown(t)
	// Still there: its msg2 arrived, and frames flow.
	got := make([]byte, wire.FMPMsg2Size)
	genuine.SetReadDeadline(time.Now().Add(waitFor))
	if _, err := io.ReadFull(genuine, got); err != nil || !bytes.Equal(got, msg2(t, 1)) {
		t.Fatalf("genuine peer's msg2: %v %x", err, got)
	}
	if _, err := genuine.Write(frame(t, 2, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From != addrOf(genuine) {
		t.Fatalf("from %s", got.From)
	}
	// Only answered ones left unauthenticated: the oldest of them goes.
	if err := b.Send(addrOf(n2), msg2(t, 5)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(addrOf(n3), msg2(t, 6)); err != nil {
		t.Fatal(err)
	}
	dialFrom(t, "127.0.0.8", b.addr(t))
	expectClosed(t, genuine)
	if got := b.nextDown(t); got != addrOf(genuine) {
		t.Fatalf("evicted %s, want the oldest answered %s", got, genuine.LocalAddr())
	}
	if st := b.Stats(); st.UnauthenticatedEvicted != 4 || st.ConnectsRefused != 0 {
		t.Fatalf("stats %+v", st)
	}

	// A source at its share (slots to spare) makes room from its own
	// connections, not another source's older one.
	o.MaxInboundConnections = 8
	c := newNode(t, 2, o, nil)
	other := dialFrom(t, "127.0.0.10", c.addr(t))
	var own []net.Conn
	for range 3 {
		x := dialFrom(t, "127.0.0.9", c.addr(t))
		if _, err := x.Write(frame(t, 3, 20)); err != nil {
			t.Fatal(err)
		}
		if got := c.in.Next(t); got.From != addrOf(x) {
			t.Fatalf("from %s", got.From)
		}
		own = append(own, x)
	}
	expectClosed(t, own[0])
	if got := c.nextDown(t); got != addrOf(own[0]) {
		t.Fatalf("evicted %s, want its own source's oldest %s", got, own[0].LocalAddr())
	}
	if _, err := other.Write(frame(t, 4, 20)); err != nil {
		t.Fatal(err)
	}
	if got := c.in.Next(t); got.From != addrOf(other) {
		t.Fatalf("from %s", got.From)
	}
	if st := c.Stats(); st.UnauthenticatedEvicted != 1 || st.InboundSourceRefused != 0 || st.ConnectionsUp != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// TestInvalidFrameClosesUnauthenticated: an inbound connection whose
// first frame is a msg2 (no initiator starts with one), or on which the
// node rejects a frame (Rejected), is closed at once and counted, not
// held for the unauthenticated deadline. A connection carrying an
// authenticated link survives a rejected frame: anyone can forge one
// with a link's index.
func TestInvalidFrameClosesUnauthenticated(t *testing.T) {
	b := newNode(t, 1, listening(), nil)

	m2 := rawDial(t, b.addr(t))
	if _, err := m2.Write(msg2(t, 1)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, m2)
	b.nextDown(t)

	junk := rawDial(t, b.addr(t))
	if _, err := junk.Write(frame(t, 1, 20)); err != nil {
		t.Fatal(err)
	}
	b.Rejected(b.in.Next(t).From)
	expectClosed(t, junk)
	b.nextDown(t)

	good := rawDial(t, b.addr(t))
	if _, err := good.Write(msg1(t, 2)); err != nil {
		t.Fatal(err)
	}
	from := b.in.Next(t).From
	b.Authenticated(from)
	b.Rejected(from)
	if _, err := good.Write(frame(t, 2, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From != from {
		t.Fatalf("from %s", got.From)
	}
	if st := b.Stats(); st.InvalidClosed != 2 || st.DroppedInvalid != 1 || st.ConnectionsUp != 1 || st.UnauthenticatedClosed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestEvictionSparesMsg1Senders: a connection that opened with a msg1 the
// node has yet to judge goes after every connection that sent nothing,
// even younger ones.
func TestEvictionSparesMsg1Senders(t *testing.T) {
	o := listening()
	o.MaxInboundConnections = 3
	o.MaxInboundPerSource = 8
	b := newNode(t, 1, o, nil)
	early := rawDial(t, b.addr(t))
	if _, err := early.Write(msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	b.in.Next(t) // read: it is a msg1 sender now
	var silent []net.Conn
	for range 2 {
		silent = append(silent, rawDial(t, b.addr(t)))
	}
	// The silent ones' read loops must have run (they are spared until
	// then): wait until both are reading.
	for _, c := range silent {
		for {
			b.mu.RLock()
			x := b.conns[addrOf(c)]
			reading := x != nil && x.reading.Load()
			b.mu.RUnlock()
			if reading {
				break
			}
			runtime.Gosched()
		}
	}
	rawDial(t, b.addr(t))
	expectClosed(t, silent[0])
	if got := b.nextDown(t); got != addrOf(silent[0]) {
		t.Fatalf("evicted %s, want the oldest silent %s", got, silent[0].LocalAddr())
	}
	if _, err := early.Write(frame(t, 2, 20)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); got.From != addrOf(early) {
		t.Fatalf("from %s", got.From)
	}
	if st := b.Stats(); st.UnauthenticatedEvicted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// v1 is an upstream next handshake packet of phase with a Noise part of n
// bytes.
func v1(t *testing.T, phase uint8, n int) []byte {
	t.Helper()
	h := wire.FMPv1Handshake{Phase: phase, SenderIndex: 7, ReceiverIndex: 8, Noise: bytes.Repeat([]byte{0x33}, n)}
	b := make([]byte, h.Len())
	if _, err := h.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// With Next a stream carries next's version-1 packets (XX msg1 of 41
// bytes, msg2 and msg3 with payloads, 0x10 frames) beside master's, each
// framed by its own version; without it a version-1 packet ends the
// stream as upstream master ends it, and with it junk still does.
func TestNextFraming(t *testing.T) {
	opts := listening()
	opts.Next = true
	b := newNode(t, 1, opts, nil)
	a := newNode(t, 2, Options{MTU: opts.MTU, Next: true, ConnectTimeout: time.Second}, nil)
	f10 := frame(t, 9, 200)
	f10[0] = 0x10
	pkts := [][]byte{
		v1(t, wire.FMPPhaseMsg1, wire.XXMsg1Size),
		v1(t, wire.FMPPhaseMsg2, wire.XXMsg2Size+26),
		v1(t, wire.FMPPhaseMsg3, wire.XXMsg3Size+wire.FMPv1HandshakeMaxExtra),
		f10,
		msg1(t, 3),
		frame(t, 4, 10),
	}
	for _, p := range pkts {
		if err := a.Send(b.addr(t), p); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range pkts {
		if got := b.in.Next(t); !bytes.Equal(got.Data, want) {
			t.Fatalf("packet %d: got %x", i, got.Data)
		}
	}
	c := rawDial(t, b.addr(t))
	if _, err := c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)

	old := newNode(t, 3, listening(), nil)
	c = rawDial(t, old.addr(t))
	if _, err := c.Write(v1(t, wire.FMPPhaseMsg1, wire.XXMsg1Size)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	if st := old.Stats(); st.DroppedInvalid != 1 || st.PacketsRecv != 0 {
		t.Fatalf("without Next: %+v", st)
	}
}
