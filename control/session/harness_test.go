package session

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// An in-memory mesh: every SessionDatagram goes straight to its
// destination's table (end to end, as the router would deliver it), through
// a FIFO so that nothing re-enters a table, with optional seeded loss.

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type packet struct {
	src, dest identity.NodeAddr
	b         []byte
}

type delivery struct {
	src              identity.NodeAddr
	srcPort, dstPort uint16
	payload          []byte
}

type node struct {
	id     *identity.Identity
	addr   identity.NodeAddr
	net    *mesh
	tbl    *Table
	coords []identity.NodeAddr
	cache  map[identity.NodeAddr][]identity.NodeAddr
	mtu    int
	noRout bool // SendDatagram fails: no route
	// hops are the next hops NextHop names (default: dest itself).
	hops map[identity.NodeAddr]identity.NodeAddr
	// notified are the path MTUs NotifiedPathMTU reports.
	notified map[identity.NodeAddr]uint16

	sent      []packet // every datagram this node originated
	delivered []delivery
	frames    []Frame
	events    []Event
	lookups   int
	invalid   int
}

type mesh struct {
	t     testing.TB
	now   time.Time
	nodes map[identity.NodeAddr]*node
	queue []packet
	rng   *rand.Rand
	loss  float64
	// drop decides loss per packet when set (overrides loss).
	drop    func(p packet) bool
	dropped []packet
	rnd     *rand.ChaCha8
	epochN  byte
}

func newMesh(t testing.TB, seed uint64) *mesh {
	return &mesh{t: t, now: t0, nodes: map[identity.NodeAddr]*node{},
		rng: rand.New(rand.NewPCG(seed, 7)), rnd: rand.NewChaCha8([32]byte{byte(seed), 1})}
}

func (m *mesh) addNode(cfg Config) *node {
	id, err := identity.Generate(m.rnd)
	if err != nil {
		m.t.Fatal(err)
	}
	n := &node{id: id, addr: id.NodeAddr(), net: m, mtu: 1280, cache: map[identity.NodeAddr][]identity.NodeAddr{}}
	n.coords = []identity.NodeAddr{n.addr}
	m.epochN++
	n.tbl = New(id, noise.Epoch{m.epochN}, cfg, n, n, nil, m.rnd)
	m.nodes[n.addr] = n
	return n
}

// restart replaces n's table (same identity, new epoch).
func (m *mesh) restart(n *node, cfg Config) {
	m.epochN++
	n.tbl = New(n.id, noise.Epoch{m.epochN}, cfg, n, n, nil, m.rnd)
}

func pair(t testing.TB, seed uint64, cfg Config) (*mesh, *node, *node) {
	m := newMesh(t, seed)
	a, b := m.addNode(cfg), m.addNode(cfg)
	if b.addr.Less(a.addr) {
		a, b = b, a
	}
	return m, a, b // a has the smaller address
}

func (m *mesh) run() {
	for len(m.queue) > 0 {
		p := m.queue[0]
		m.queue = m.queue[1:]
		lost := false
		if m.drop != nil {
			lost = m.drop(p)
		} else if m.loss > 0 {
			lost = m.rng.Float64() < m.loss
		}
		if lost {
			m.dropped = append(m.dropped, p)
			continue
		}
		if d := m.nodes[p.dest]; d != nil {
			d.tbl.HandleFSP(m.now, p.src, p.src, false, p.b)
		}
	}
}

func (m *mesh) advance(d time.Duration) {
	m.now = m.now.Add(d)
}

func (m *mesh) tickAll() {
	for _, n := range m.nodes {
		n.tbl.Tick(m.now)
	}
	m.run()
}

// Env

func (n *node) SendDatagram(now time.Time, dest identity.NodeAddr, fsp []byte) (uint16, error) {
	if n.noRout {
		return 0, errors.New("no route")
	}
	p := packet{n.addr, dest, bytes.Clone(fsp)}
	n.sent = append(n.sent, p)
	n.net.queue = append(n.net.queue, p)
	return uint16(n.mtu), nil
}
func (n *node) Coords() []identity.NodeAddr { return n.coords }
func (n *node) CachedCoords(dest identity.NodeAddr) ([]identity.NodeAddr, bool) {
	c, ok := n.cache[dest]
	return c, ok
}
func (n *node) CacheCoords(_ time.Time, addr identity.NodeAddr, c []identity.NodeAddr) {
	n.cache[addr] = c
}
func (n *node) InvalidateCoords(addr identity.NodeAddr) { delete(n.cache, addr); n.invalid++ }
func (n *node) TransportMTU() int                       { return n.mtu }
func (n *node) Identity(dest identity.NodeAddr) (identity.PublicKey, bool) {
	if d := n.net.nodes[dest]; d != nil {
		return d.id.PublicKey(), true
	}
	return identity.PublicKey{}, false
}
func (n *node) LearnIdentity(identity.NodeAddr, identity.PublicKey) {}
func (n *node) StartLookup(time.Time, identity.NodeAddr)            { n.lookups++ }
func (n *node) NotifiedPathMTU(dest identity.NodeAddr) (uint16, bool) {
	m, ok := n.notified[dest]
	return m, ok
}
func (n *node) NextHop(_ time.Time, dest identity.NodeAddr) (identity.NodeAddr, bool) {
	if h, ok := n.hops[dest]; ok {
		return h, true
	}
	return dest, true // the harness delivers end to end
}

// Upper

func (n *node) Deliver(_ time.Time, src identity.NodeAddr, sp, dp uint16, payload []byte, _ bool) {
	n.delivered = append(n.delivered, delivery{src, sp, dp, bytes.Clone(payload)})
}
func (n *node) Frame(_ time.Time, _ identity.NodeAddr, f Frame) {
	f.Body = nil
	n.frames = append(n.frames, f)
}
func (n *node) Sent(time.Time, identity.NodeAddr, uint64, uint32, int) {}
func (n *node) Event(_ time.Time, ev Event)                            { n.events = append(n.events, ev) }

func (n *node) state(peer *node) State {
	in, ok := n.tbl.Session(peer.addr)
	if !ok {
		return StateNone
	}
	return in.State
}

// establish brings a→b up and checks both ends.
func establish(t testing.TB, m *mesh, a, b *node) {
	t.Helper()
	if err := a.tbl.Send(m.now, b.addr, 1024, 1024, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
		t.Fatalf("not established: %v / %v", a.state(b), b.state(a))
	}
}

// encrypted parses the FSP encrypted messages a node sent to dest.
func encryptedTo(t testing.TB, n *node, dest identity.NodeAddr) []wire.FSPEncrypted {
	t.Helper()
	var out []wire.FSPEncrypted
	for _, p := range n.sent {
		if p.dest != dest {
			continue
		}
		if k, _ := wire.ClassifyFSP(p.b); k != wire.FSPKindEncrypted {
			continue
		}
		e, err := wire.ParseFSPEncrypted(p.b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
