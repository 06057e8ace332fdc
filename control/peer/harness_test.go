package peer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// simNet is an in-memory datagram network between Managers on a simulated
// clock, with seeded loss and reordering.
type simNet struct {
	t       *testing.T
	now     time.Time
	rng     *rand.Rand
	nodes   map[transport.Addr]*simNode
	queue   []simPkt
	loss    float64 // probability a packet is dropped
	reorder bool    // deliver the queue in random order
	dropped int     // packets dropped by the network
	// cut blocks traffic between two addresses in both directions.
	cut map[[2]transport.Addr]bool
	// dropHook sees every packet the network drops.
	dropHook func(simPkt)
	// intercept sees every packet before delivery and drops those it
	// returns true for.
	intercept func(simPkt) bool
	// filter drops established frames whose receiver index the
	// destination has not reported through IndexObserver, as xdp_fips
	// does; filtered counts them.
	filter   bool
	filtered int
	// names is the network's name service: "host:port" → address, for
	// static peers configured by name.
	names map[string]transport.Addr
}

type simPkt struct {
	from, to transport.Addr
	data     []byte
}

type simNode struct {
	net    *simNet
	addr   transport.Addr
	m      *Manager
	id     *identity.Identity
	logs   *bytes.Buffer
	accept bool
	silent bool     // PeerUp sends nothing
	msg1s  [][]byte // every msg1 it sent, as an on-path observer captures them
	// connections it was asked to close, and addresses it was told carry
	// an authenticated link
	closed, authed []transport.Addr
	// resolves counts ResolveStatic calls; deferResolve makes it answer
	// later (the test calls StaticResolved), as the node's DNS lookups do.
	resolves     int
	deferResolve bool
	// what Upper saw
	up, down []identity.NodeAddr
	downWhy  []string
	msgs     []upperMsg
	// indices are the receiver indices reported through IndexObserver;
	// indexErrs what it was told out of order.
	indices   map[uint32]bool
	indexErrs []string
}

type upperMsg struct {
	from  identity.NodeAddr
	flags uint8
	msg   []byte
}

func newSimNet(t *testing.T, seed uint64) *simNet {
	return &simNet{t: t, now: time.Unix(1_700_000_000, 0), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		nodes: map[transport.Addr]*simNode{}, cut: map[[2]transport.Addr]bool{}, names: map[string]transport.Addr{}}
}

func simAddr(i int) transport.Addr {
	return transport.AddrFromIP(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), 2121))
}

// seededReader is a deterministic randomness source for keys, indices and epochs.
type seededReader struct{ r *rand.Rand }

func (s seededReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(s.r.Uint32())
	}
	return len(b), nil
}

func (n *simNet) add(i int, cfg Config) *simNode {
	id, err := identity.Generate(seededReader{n.rng})
	if err != nil {
		n.t.Fatal(err)
	}
	return n.addWithIdentity(i, cfg, id)
}

func (n *simNet) addWithIdentity(i int, cfg Config, id *identity.Identity) *simNode {
	node := &simNode{net: n, addr: simAddr(i), id: id, logs: &bytes.Buffer{}, accept: true}
	log := slog.New(slog.NewTextHandler(node.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := New(cfg, id, node, node, log, seededReader{n.rng})
	if err != nil {
		n.t.Fatal(err)
	}
	node.m = m
	n.nodes[node.addr] = node
	return node
}

// Env
func (s *simNode) Send(_ transport.ID, to transport.Addr, pkt []byte) error {
	if len(pkt) > 0 && pkt[0]&0x0f == wire.FMPPhaseMsg1 {
		s.msg1s = append(s.msg1s, append([]byte(nil), pkt...))
	}
	s.net.queue = append(s.net.queue, simPkt{from: s.addr, to: to, data: append([]byte(nil), pkt...)})
	return nil
}
func (s *simNode) LinkMTU(transport.ID, transport.Addr) int         { return 1280 }
func (s *simNode) AcceptConnections(transport.ID) bool              { return s.accept }
func (s *simNode) CloseConnection(_ transport.ID, a transport.Addr) { s.closed = append(s.closed, a) }
func (s *simNode) LinkAuthenticated(_ transport.ID, a transport.Addr) {
	s.authed = append(s.authed, a)
}

// IndexAdded and IndexRemoved implement IndexObserver.
func (s *simNode) IndexAdded(_ transport.ID, idx uint32) {
	if s.indices == nil {
		s.indices = map[uint32]bool{}
	}
	if s.indices[idx] {
		s.indexErrs = append(s.indexErrs, fmt.Sprintf("index %#x added twice", idx))
	}
	s.indices[idx] = true
}

func (s *simNode) IndexRemoved(_ transport.ID, idx uint32) {
	if !s.indices[idx] {
		s.indexErrs = append(s.indexErrs, fmt.Sprintf("index %#x removed, never added", idx))
	}
	delete(s.indices, idx)
}

// ResolveStatic implements StaticResolver from the network's names.
func (s *simNode) ResolveStatic(_ identity.NodeAddr, targets []StaticAddress) (Resolution, bool) {
	s.resolves++
	if s.deferResolve {
		return Resolution{}, false
	}
	return s.net.resolve(targets), true
}

func (n *simNet) resolve(targets []StaticAddress) Resolution {
	var res Resolution
	for _, tg := range targets {
		if a, ok := n.names[tg.Addr]; ok {
			res.Candidates = append(res.Candidates, Candidate{Transport: tg.Transport, Addr: a})
		} else {
			res.Err = fmt.Errorf("lookup %s: no such host", tg.Addr)
		}
	}
	return res
}

// Upper
// PeerUp sends a frame at once, as the node's TreeAnnounce does: it is
// what proves an initiator's address to the responder.
func (s *simNode) PeerUp(p *Peer) {
	s.up = append(s.up, p.NodeAddr)
	if !s.silent {
		s.m.SendLink(s.net.now, p, 0, []byte{byte(wire.MsgHeartbeat)})
	}
}
func (s *simNode) PeerDown(p *Peer, why string) {
	s.down = append(s.down, p.NodeAddr)
	s.downWhy = append(s.downWhy, why)
}
func (s *simNode) LinkMessage(p *Peer, flags uint8, _ uint32, msg []byte) {
	s.msgs = append(s.msgs, upperMsg{p.NodeAddr, flags, append([]byte(nil), msg...)})
}

func (s *simNode) candidate(to *simNode) Candidate { return Candidate{Transport: 1, Addr: to.addr} }

// deliver runs the network until no packets are in flight.
func (n *simNet) deliver() {
	for guard := 0; len(n.queue) > 0; guard++ {
		if guard > 1_000_000 {
			n.t.Fatal("network never went quiet")
		}
		i := 0
		if n.reorder && len(n.queue) > 1 {
			i = n.rng.IntN(len(n.queue))
		}
		p := n.queue[i]
		n.queue = append(n.queue[:i], n.queue[i+1:]...)
		if n.intercept != nil && n.intercept(p) {
			continue
		}
		if n.cut[[2]transport.Addr{p.from, p.to}] || n.cut[[2]transport.Addr{p.to, p.from}] ||
			(n.loss > 0 && n.rng.Float64() < n.loss) {
			n.dropped++
			if n.dropHook != nil {
				n.dropHook(p)
			}
			continue
		}
		dst := n.nodes[p.to]
		if dst != nil && n.filter && len(p.data) >= wire.FMPPrefixSize+4 && p.data[0] == wire.FMPPhaseEstablished &&
			!dst.indices[binary.LittleEndian.Uint32(p.data[4:8])] {
			n.filtered++
			continue
		}
		if dst != nil {
			dst.m.HandlePacket(n.now, 1, p.from, p.data)
		}
	}
}

// advance moves the clock in tick steps, ticking every node and delivering.
func (n *simNet) advance(d, tick time.Duration) {
	end := n.now.Add(d)
	for n.now.Before(end) {
		n.now = n.now.Add(tick)
		for _, node := range n.nodes {
			node.m.Tick(n.now)
		}
		n.deliver()
	}
}

func (n *simNet) setCut(a, b *simNode, cut bool) {
	n.cut[[2]transport.Addr{a.addr, b.addr}] = cut
}

// linked asserts a and b are active peers of each other on one session.
func linked(t *testing.T, a, b *simNode) {
	t.Helper()
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	if pa == nil || pb == nil {
		t.Fatalf("not linked: a→b %v, b→a %v\nA log:\n%s\nB log:\n%s", pa != nil, pb != nil, a.logs, b.logs)
	}
	if pa.OurIndex() != pb.TheirIndex() || pa.TheirIndex() != pb.OurIndex() {
		t.Fatalf("sessions disagree: a(our %x their %x) b(our %x their %x)", pa.OurIndex(), pa.TheirIndex(), pb.OurIndex(), pb.TheirIndex())
	}
}

func lookupMsg(i int) []byte {
	// A LookupRequest-typed payload: the link layer does not parse bodies of
	// messages it hands up, only their type byte.
	return []byte(fmt.Sprintf("%c-payload-%06d", wire.MsgLookupRequest, i))
}
