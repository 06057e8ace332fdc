package route

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

var t0 = time.UnixMilli(1_700_000_000_000)

// seeded is a deterministic byte stream for keys, ids and nonces.
type seeded struct{ r *rand.ChaCha8 }

func newSeeded(seed uint64) *seeded {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return &seeded{rand.NewChaCha8(s)}
}

func (s *seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

// addr makes a NodeAddr whose first byte is b, the rest tag.
func addr(b byte) identity.NodeAddr {
	var a identity.NodeAddr
	a[0] = b
	a[15] = 0xAA
	return a
}

func path(as ...identity.NodeAddr) []identity.NodeAddr { return as }

func mustIdentity(t testing.TB, rnd *seeded) *identity.Identity {
	t.Helper()
	id, err := identity.Generate(rnd)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fakeTopo is a static tree view.
type fakeTopo struct {
	coords     []identity.NodeAddr
	peerCoords map[identity.NodeAddr][]identity.NodeAddr
	tree       map[identity.NodeAddr]bool
}

func newTopo(coords ...identity.NodeAddr) *fakeTopo {
	return &fakeTopo{coords: coords, peerCoords: map[identity.NodeAddr][]identity.NodeAddr{}, tree: map[identity.NodeAddr]bool{}}
}

func (f *fakeTopo) Coords() []identity.NodeAddr { return f.coords }
func (f *fakeTopo) PeerCoords(p identity.NodeAddr) ([]identity.NodeAddr, bool) {
	c, ok := f.peerCoords[p]
	return c, ok
}
func (f *fakeTopo) IsTreePeer(p identity.NodeAddr) bool { return f.tree[p] }

// fakeFilters maps a peer to the destinations its filter holds.
type fakeFilters map[identity.NodeAddr]map[identity.NodeAddr]bool

func (f fakeFilters) MayReach(p, d identity.NodeAddr) bool { return f[p][d] }

// OverCap: overCap marks a peer by the zero address, which no test uses
// as a destination.
func (f fakeFilters) OverCap(p identity.NodeAddr) bool { return f[p][identity.NodeAddr{}] }

func (f fakeFilters) overCap(p identity.NodeAddr) { f.add(p, identity.NodeAddr{}) }

func (f fakeFilters) add(p identity.NodeAddr, ds ...identity.NodeAddr) {
	if f[p] == nil {
		f[p] = map[identity.NodeAddr]bool{}
	}
	for _, d := range ds {
		f[p][d] = true
	}
}

type fakePeer struct {
	cost      float64
	mtu       int
	blocked   bool // CanSend false
	congested bool
}

type sent struct {
	to  identity.NodeAddr
	ce  bool
	msg []byte
}

// fakeLinks records what is sent.
type fakeLinks struct {
	peers   map[identity.NodeAddr]*fakePeer
	sent    []sent
	sendErr func(p identity.NodeAddr, msg []byte) error
}

func newLinks() *fakeLinks { return &fakeLinks{peers: map[identity.NodeAddr]*fakePeer{}} }

func (f *fakeLinks) add(p identity.NodeAddr) *fakePeer {
	fp := &fakePeer{cost: 1, mtu: 1280}
	f.peers[p] = fp
	return fp
}

func (f *fakeLinks) Peers() []identity.NodeAddr { return sortedKeys(f.peers) }
func (f *fakeLinks) CanSend(p identity.NodeAddr) bool {
	fp, ok := f.peers[p]
	return ok && !fp.blocked
}
func (f *fakeLinks) LinkCost(p identity.NodeAddr) float64 {
	if fp, ok := f.peers[p]; ok {
		return fp.cost
	}
	return 1
}
func (f *fakeLinks) LinkMTU(p identity.NodeAddr) int {
	if fp, ok := f.peers[p]; ok {
		return fp.mtu
	}
	return 0
}
func (f *fakeLinks) Congested(p identity.NodeAddr) bool {
	fp, ok := f.peers[p]
	return ok && fp.congested
}
func (f *fakeLinks) Send(p identity.NodeAddr, ce bool, msg []byte) error {
	if f.sendErr != nil {
		if err := f.sendErr(p, msg); err != nil {
			return err
		}
	}
	if _, ok := f.peers[p]; !ok {
		return errors.New("not a peer")
	}
	f.sent = append(f.sent, sent{to: p, ce: ce, msg: slices.Clone(msg)})
	return nil
}

func (f *fakeLinks) take() []sent {
	s := f.sent
	f.sent = nil
	return s
}

// mtuLimit refuses messages larger than mtu − FMP overhead on every link.
func mtuLimit(mtu int) func(identity.NodeAddr, []byte) error {
	return func(_ identity.NodeAddr, msg []byte) error {
		if size := len(msg) + 36; size > mtu {
			return &transport.MTUError{Size: size, MTU: mtu}
		}
		return nil
	}
}

type fakeIDs map[identity.NodeAddr]identity.PublicKey

func (f fakeIDs) Lookup(a identity.NodeAddr) (identity.PublicKey, bool) {
	pk, ok := f[a]
	return pk, ok
}

// fixture is one Router with fakes around it.
type fixture struct {
	id    *identity.Identity
	self  identity.NodeAddr
	topo  *fakeTopo
	flt   fakeFilters
	links *fakeLinks
	ids   fakeIDs
	r     *Router
	rnd   *seeded
}

func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	rnd := newSeeded(1)
	f := &fixture{id: mustIdentity(t, rnd), flt: fakeFilters{}, links: newLinks(), ids: fakeIDs{}, rnd: rnd}
	f.self = f.id.NodeAddr()
	f.topo = newTopo(f.self) // root until a test says otherwise
	f.r = New(f.id, cfg, f.topo, f.flt, f.links, f.ids, nil, rnd)
	return f
}

// child adds a sendable peer that is our tree child under root self.
func (f *fixture) child(p identity.NodeAddr) *fakePeer {
	fp := f.links.add(p)
	f.topo.peerCoords[p] = append([]identity.NodeAddr{p}, f.topo.coords...)
	f.topo.tree[p] = true
	return fp
}

func datagram(t testing.TB, ttl uint8, mtu uint16, src, dst identity.NodeAddr, payload []byte) []byte {
	t.Helper()
	d := wire.SessionDatagram{TTL: ttl, PathMTU: mtu, Src: src, Dest: dst, Payload: payload}
	b := make([]byte, d.Len())
	if _, err := d.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func marshal(t testing.TB, m interface {
	Len() int
	MarshalTo([]byte) (int, error)
}) []byte {
	t.Helper()
	b := make([]byte, m.Len())
	if _, err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func parseDG(t testing.TB, b []byte) wire.SessionDatagram {
	t.Helper()
	d, err := wire.ParseSessionDatagram(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
