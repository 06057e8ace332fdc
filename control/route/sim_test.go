package route

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// simNet wires several Routers through an in-memory FIFO on a simulated
// clock. Topology and filters are computed from a static tree: every edge
// is a tree edge, the root is the smallest address, and a neighbour's
// filter holds exactly the nodes on its side of the edge (split horizon
// with exact sets).
type simNet struct {
	t      testing.TB
	now    time.Time
	nodes  []*simNode
	byAddr map[identity.NodeAddr]*simNode
	queue  []simMsg
	ids    fakeIDs
	trace  []string
	// tamper may rewrite or drop (nil) a message in flight.
	tamper func(m simMsg) []byte
}

type simMsg struct {
	from, to identity.NodeAddr
	ce       bool
	msg      []byte
}

type simNode struct {
	net       *simNet
	id        *identity.Identity
	addr      identity.NodeAddr
	topo      *fakeTopo
	flt       fakeFilters
	mtu       map[identity.NodeAddr]int // link MTU per neighbour
	r         *Router
	events    []LookupEvent
	delivered []*Delivery
	errs      []error
}

func (n *simNode) Peers() []identity.NodeAddr         { return sortedKeys(n.mtu) }
func (n *simNode) CanSend(p identity.NodeAddr) bool   { _, ok := n.mtu[p]; return ok }
func (n *simNode) LinkCost(identity.NodeAddr) float64 { return 1 }
func (n *simNode) LinkMTU(p identity.NodeAddr) int    { return n.mtu[p] }
func (n *simNode) Congested(identity.NodeAddr) bool   { return false }
func (n *simNode) Send(p identity.NodeAddr, ce bool, msg []byte) error {
	if _, ok := n.mtu[p]; !ok {
		return errors.New("not a peer")
	}
	n.net.queue = append(n.net.queue, simMsg{from: n.addr, to: p, ce: ce, msg: slices.Clone(msg)})
	return nil
}

// newSimTree builds n nodes (keys from seed) joined by edges.
func newSimTree(t testing.TB, seed uint64, n int, edges [][2]int) *simNet {
	rnd := newSeeded(seed)
	net := &simNet{t: t, now: t0, byAddr: map[identity.NodeAddr]*simNode{}, ids: fakeIDs{}}
	for range n {
		id := mustIdentity(t, rnd)
		node := &simNode{net: net, id: id, addr: id.NodeAddr(), flt: fakeFilters{}, mtu: map[identity.NodeAddr]int{}}
		net.nodes = append(net.nodes, node)
		net.byAddr[node.addr] = node
		net.ids[node.addr] = id.PublicKey()
	}
	adj := make([][]int, n)
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	root := 0
	for i := range net.nodes {
		if net.nodes[i].addr.Less(net.nodes[root].addr) {
			root = i
		}
	}
	parent := make([]int, n)
	for i := range parent {
		parent[i] = -2
	}
	parent[root] = -1
	q := []int{root}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		for _, y := range adj[x] {
			if parent[y] == -2 {
				parent[y] = x
				q = append(q, y)
			}
		}
	}
	coords := func(i int) []identity.NodeAddr {
		var c []identity.NodeAddr
		for ; i >= 0; i = parent[i] {
			c = append(c, net.nodes[i].addr)
		}
		return c
	}
	// side(i, j): the nodes reached from j without crossing back to i.
	var side func(from, at int, out map[identity.NodeAddr]bool)
	side = func(from, at int, out map[identity.NodeAddr]bool) {
		out[net.nodes[at].addr] = true
		for _, y := range adj[at] {
			if y != from {
				side(at, y, out)
			}
		}
	}
	for i, node := range net.nodes {
		node.topo = newTopo(coords(i)...)
		for _, j := range adj[i] {
			pa := net.nodes[j].addr
			node.mtu[pa] = 1280
			node.topo.peerCoords[pa] = coords(j)
			node.topo.tree[pa] = true
			set := map[identity.NodeAddr]bool{}
			side(i, j, set)
			node.flt[pa] = set
		}
		node.r = New(node.id, DefaultConfig(), node.topo, node.flt, node, net.ids, nil, rnd)
		node.r.OnLookup(func(_ time.Time, ev LookupEvent) { node.events = append(node.events, ev) })
	}
	return net
}

func line(n int) [][2]int {
	var e [][2]int
	for i := 1; i < n; i++ {
		e = append(e, [2]int{i - 1, i})
	}
	return e
}

func (net *simNet) idx(a identity.NodeAddr) int {
	return slices.Index(net.nodes, net.byAddr[a])
}

// run delivers queued messages until none are left.
func (net *simNet) run() {
	for steps := 0; len(net.queue) > 0; steps++ {
		if steps > 100000 {
			net.t.Fatal("message storm")
		}
		m := net.queue[0]
		net.queue = net.queue[1:]
		if net.tamper != nil {
			if m.msg = net.tamper(m); m.msg == nil {
				continue
			}
		}
		net.trace = append(net.trace, fmt.Sprintf("%d %d→%d %x", net.now.UnixMilli(), net.idx(m.from), net.idx(m.to), m.msg))
		to := net.byAddr[m.to]
		var err error
		switch wire.MsgType(m.msg[0]) {
		case wire.MsgSessionDatagram:
			var d *Delivery
			d, err = to.r.HandleSessionDatagram(net.now, m.from, m.ce, m.msg)
			if d != nil {
				d.Payload = slices.Clone(d.Payload)
				to.delivered = append(to.delivered, d)
			}
		case wire.MsgLookupRequest:
			err = to.r.HandleLookupRequest(net.now, m.from, m.msg)
		case wire.MsgLookupResponse:
			err = to.r.HandleLookupResponse(net.now, m.from, m.msg)
		}
		if err != nil {
			to.errs = append(to.errs, err)
		}
	}
}

// advance ticks every router once a second up to d later, delivering
// messages in between.
func (net *simNet) advance(d time.Duration) {
	end := net.now.Add(d)
	for net.now.Before(end) {
		net.now = net.now.Add(time.Second)
		for _, n := range net.nodes {
			n.r.Tick(net.now)
		}
		net.run()
	}
}

func TestSimLookupThreeNodeChain(t *testing.T) {
	net := newSimTree(t, 11, 3, line(3))
	n0, n1, n2 := net.nodes[0], net.nodes[1], net.nodes[2]
	n2.mtu[n1.addr] = 1400 // the target folds its own first hop
	n1.mtu[n0.addr] = 1300 // the transit folds its hop
	if o, sent := n0.r.StartLookup(net.now, n2.addr); o != StartSent || sent != 1 {
		t.Fatal(o, sent)
	}
	net.run()
	if len(n0.events) != 1 || n0.events[0].Outcome != LookupFound || n0.events[0].PathMTU != 1300 {
		t.Fatalf("events %+v", n0.events)
	}
	e, ok := n0.r.Cache().Entry(n2.addr)
	if !ok || e.PathMTU != 1300 || !slices.Equal(e.Coords, n2.topo.coords) {
		t.Fatalf("cached %+v, want coords %v", e, n2.topo.coords)
	}
	if n0.r.LookupPending(n2.addr) {
		t.Fatal("still pending")
	}
	s1, s2 := n1.r.Stats().Lookup, n2.r.Stats().Lookup
	if s1.ReqForwarded != 1 || s1.RespForwarded != 1 || len(n1.r.recent) != 1 || s2.ReqTargetIsUs != 1 || len(n2.r.recent) != 1 {
		t.Fatalf("transit %+v target %+v", s1, s2)
	}
	if n1.r.Cache().Contains(net.now, n2.addr) {
		t.Fatal("transit cached the target from the response")
	}
}

// The response takes the reverse path even when the tree would route
// elsewhere: here it is checked hop by hop through the trace.
func TestSimLookupTwentyNodeLine(t *testing.T) {
	const n = 20
	net := newSimTree(t, 12, n, line(n))
	first, last := net.nodes[0], net.nodes[n-1]
	first.r.StartLookup(net.now, last.addr)
	net.run()
	if len(first.events) != 1 || first.events[0].Outcome != LookupFound {
		t.Fatalf("events %+v", first.events)
	}
	// 19 request hops out, 19 response hops back, in order.
	if len(net.trace) != 2*(n-1) {
		t.Fatalf("%d messages", len(net.trace))
	}
	for i, line := range net.trace {
		want := fmt.Sprintf(" %d→%d ", i, i+1)
		if i >= n-1 {
			k := 2*(n-1) - i
			want = fmt.Sprintf(" %d→%d ", k, k-1)
		}
		if !strings.Contains(line, want) {
			t.Fatalf("hop %d: %s, want %s", i, line[:40], want)
		}
	}
	for _, mid := range net.nodes[1 : n-1] {
		if s := mid.r.Stats().Lookup; s.ReqForwarded != 1 || s.RespForwarded != 1 {
			t.Fatalf("transit %+v", s)
		}
	}

	// A SessionSetup with the found coordinates now reaches the far end,
	// warming every transit cache on the way.
	setup := marshal(t, wire.SessionSetup{SrcCoords: wire.CoordsOf(first.topo.coords...), DestCoords: wire.CoordsOf(first.events[0].Coords...), Handshake: make([]byte, wire.XKMsg1Size)})
	if err := first.r.SendDatagram(net.now, last.addr, setup); err != nil {
		t.Fatal(err)
	}
	net.run()
	if len(last.delivered) != 1 || last.delivered[0].TTL != 64-(n-2) || last.delivered[0].PathMTU != 1280 || last.delivered[0].Src != first.addr {
		t.Fatalf("delivered %+v", last.delivered)
	}
	// And the reply comes back along warmed caches.
	if err := last.r.SendDatagram(net.now, first.addr, someFSP); err != nil {
		t.Fatal(err)
	}
	net.run()
	if len(first.delivered) != 1 || string(first.delivered[0].Payload) != string(someFSP) {
		t.Fatalf("reply %+v", first.delivered)
	}
}

// Without coordinates at the next transit a plain datagram comes back as
// CoordsRequired, delivered to the source.
func TestSimCoordsRequiredReachesSource(t *testing.T) {
	net := newSimTree(t, 13, 4, line(4))
	n0, n3 := net.nodes[0], net.nodes[3]
	n0.r.Cache().Insert(net.now, n3.addr, n3.topo.coords, 0)
	if err := n0.r.SendDatagram(net.now, n3.addr, someFSP); err != nil {
		t.Fatal(err)
	}
	net.run()
	if len(n0.delivered) != 1 {
		t.Fatalf("delivered %+v", n0.delivered)
	}
	cr, err := wire.ParseCoordsRequired(n0.delivered[0].Payload)
	if err != nil || cr.DestAddr != n3.addr || cr.Reporter != net.nodes[1].addr || n0.delivered[0].Src != net.nodes[1].addr {
		t.Fatalf("%+v %v", cr, err)
	}
}

// Convergent request paths: the target answers the first copy and drops
// the second as a duplicate; the origin still gets one verified answer.
func TestSimLookupDedupConvergentPaths(t *testing.T) {
	// 0 is the origin, 3 the target; 0–1, 0–2 and 1–3 are tree edges,
	// 2–3 a mesh link.
	net := newSimTree(t, 14, 4, [][2]int{{0, 1}, {0, 2}, {1, 3}})
	n0, n1, n2, n3 := net.nodes[0], net.nodes[1], net.nodes[2], net.nodes[3]
	n2.mtu[n3.addr] = 1280
	n3.mtu[n2.addr] = 1280
	n2.flt[n3.addr] = map[identity.NodeAddr]bool{n3.addr: true}
	n3.flt[n2.addr] = map[identity.NodeAddr]bool{n2.addr: true}
	n0.flt[n2.addr][n3.addr] = true  // a stale or false-positive hit at the origin
	delete(n2.flt[n0.addr], n3.addr) // and node 2 knows only its mesh link leads there
	if o, sent := n0.r.StartLookup(net.now, n3.addr); o != StartSent || sent != 2 {
		t.Fatal(o, sent)
	}
	net.run()
	if s := n2.r.Stats().Lookup; s.ReqFallbackForwarded != 1 {
		t.Fatalf("node 2 did not use its mesh link: %+v", s)
	}
	if s := n3.r.Stats().Lookup; s.ReqTargetIsUs != 1 || s.ReqDuplicate != 1 {
		t.Fatalf("target %+v", s)
	}
	if len(n0.events) != 1 || n0.events[0].Outcome != LookupFound || n0.r.Stats().Lookup.RespAccepted != 1 {
		t.Fatalf("origin events %+v", n0.events)
	}
	// The answer goes back the way the first copy came, whichever that was.
	if n1.r.Stats().Lookup.RespForwarded+n2.r.Stats().Lookup.RespForwarded != 1 {
		t.Fatal("response not on exactly one reverse path")
	}
}

// A response forged in flight fails verification at the origin, which
// retries with fresh ids after 1, 2, 4 and 8 s and then gives up.
func TestSimForgedProofRetriesAndTimeout(t *testing.T) {
	net := newSimTree(t, 15, 3, line(3))
	n0, n2 := net.nodes[0], net.nodes[2]
	forger := mustIdentity(t, newSeeded(77))
	var requests []int64
	net.tamper = func(m simMsg) []byte {
		switch wire.MsgType(m.msg[0]) {
		case wire.MsgLookupRequest:
			if m.from == n0.addr {
				requests = append(requests, net.now.Sub(t0).Milliseconds())
			}
		case wire.MsgLookupResponse:
			r, err := wire.ParseLookupResponse(m.msg)
			if err != nil {
				t.Fatal(err)
			}
			// Point the target somewhere else and re-sign with the wrong key.
			r.TargetCoords = wire.CoordsOf(r.Target, forger.NodeAddr())
			sig, _ := forger.Sign(r.ProofBytes(nil), nil)
			r.Proof = sig[:]
			return marshal(t, r)
		}
		return m.msg
	}
	n0.r.StartLookup(net.now, n2.addr)
	net.run()
	net.advance(16 * time.Second)
	if !slices.Equal(requests, []int64{0, 1000, 3000, 7000}) {
		t.Fatalf("requests at %v", requests)
	}
	// The transit forwards one request per target per 2 s, so the 1 s
	// retry dies there (as upstream): three answers, all rejected.
	s := n0.r.Stats().Lookup
	if s.RespProofFailed != 3 || s.RespAccepted != 0 || s.RespTimedOut != 1 || s.ReqInitiated != 4 {
		t.Fatalf("%+v", s)
	}
	if s := net.nodes[1].r.Stats().Lookup; s.ReqForwardRateLimited != 1 || s.ReqForwarded != 3 {
		t.Fatalf("transit %+v", s)
	}
	if len(n0.events) != 1 || n0.events[0].Outcome != LookupTimedOut || n0.r.Cache().Contains(net.now, n2.addr) {
		t.Fatalf("events %+v", n0.events)
	}
	// Fresh ids are not deduplicated.
	if n2.r.Stats().Lookup.ReqTargetIsUs != 3 {
		t.Fatal("retries did not reach the target")
	}
}

// An origin that receives its own request back (a stale filter sends it
// round) drops it. Upstream records it like a transit node, so the answer
// arriving later is passed on as a transit response instead of being
// accepted and that attempt fails; fips-go answers its lookup.
func TestSimOriginEchoDropped(t *testing.T) {
	net := newSimTree(t, 14, 4, [][2]int{{0, 1}, {0, 2}, {1, 3}})
	n0, n2, n3 := net.nodes[0], net.nodes[2], net.nodes[3]
	n0.flt[n2.addr][n3.addr] = true // node 2 then sends it back: its filter from 0 holds 3
	n0.r.StartLookup(net.now, n3.addr)
	net.run()
	s := n0.r.Stats().Lookup
	if len(n0.events) != 1 || n0.events[0].Outcome != LookupFound || s.RespForwarded != 0 || s.ReqDuplicate != 1 || n0.r.LookupPending(n3.addr) {
		t.Fatalf("events %+v, %+v", n0.events, s)
	}
}

// The same seed gives the same run, message for message.
func TestSimDeterministic(t *testing.T) {
	run := func() []string {
		net := newSimTree(t, 16, 12, line(12))
		net.nodes[0].r.StartLookup(net.now, net.nodes[11].addr)
		net.nodes[11].r.StartLookup(net.now, net.nodes[3].addr)
		net.run()
		net.advance(3 * time.Second)
		return net.trace
	}
	a, b := run(), run()
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Fatalf("runs differ (%d vs %d messages)", len(a), len(b))
	}
}
