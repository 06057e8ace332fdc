package route

import (
	"slices"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// nextFakeLinks is fakeLinks whose links to the peers in next are in
// upstream next's format.
type nextFakeLinks struct {
	*fakeLinks
	next map[identity.NodeAddr]bool
}

func (n nextFakeLinks) LinkIsNext(p identity.NodeAddr) bool { return n.next[p] }

// A node with links of both formats translates lookups between them
// (docs/next.md §15.4): a request from a next link (no origin coords) is
// forwarded to a master link with a one-entry origin_coords and to a next
// link in next's layout; the response goes back in the layout of the
// link it returns over; and a request for us from a next link is answered
// in next's layout.
func TestLookupsAcrossLinkFormats(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	v0peer, v1peer, v1other, target, origin := addr(0x10), addr(0x20), addr(0x30), addr(0xBB), addr(0xCC)
	f.child(v0peer)
	f.child(v1peer)
	f.child(v1other)
	f.r.links = nextFakeLinks{f.links, map[identity.NodeAddr]bool{v1peer: true, v1other: true}}
	f.flt.add(v0peer, target)
	f.flt.add(v1other, target)

	req := marshal(t, wire.LookupRequestV1{RequestID: 9, Target: target, Origin: origin, TTL: 5, MinMTU: 1280})
	if err := f.r.HandleLookupRequest(t0, v1peer, req); err != nil {
		t.Fatal(err)
	}
	out := f.links.take()
	if len(out) != 2 || out[0].to != v0peer || out[1].to != v1other {
		t.Fatalf("forwarded %+v", out)
	}
	v0, err := wire.ParseLookupRequest(out[0].msg)
	if err != nil || v0.TTL != 4 || v0.MinMTU != 1280 || v0.Origin != origin || v0.OriginCoords.Len() != 1 || v0.OriginCoords.At(0) != origin {
		t.Fatalf("to the master link: %+v %v", v0, err)
	}
	v1, err := wire.ParseLookupRequestV1(out[1].msg)
	if err != nil || len(out[1].msg) != wire.LookupRequestV1Size || v1.TTL != 4 || v1.Origin != origin {
		t.Fatalf("to the next link: %+v %v (%d bytes)", v1, err, len(out[1].msg))
	}

	// The response comes back over the master link and returns over the
	// next one, in next's layout.
	signer := mustIdentity(t, newSeeded(5))
	resp := signedResponse(t, signer, 9, target, path(target, addr(0xF0)), 1400)
	if err := f.r.HandleLookupResponse(t0, v0peer, resp); err != nil {
		t.Fatal(err)
	}
	out = f.links.take()
	if len(out) != 1 || out[0].to != v1peer {
		t.Fatalf("response sent %+v", out)
	}
	back, err := wire.ParseLookupResponseV1(out[0].msg)
	if err != nil || back.RequestID != 9 || string(back.Proof) != string(resp[len(resp)-64:]) {
		t.Fatalf("response to the next link: %+v %v", back, err)
	}

	// A master request arriving over a next link would not decode.
	if err := f.r.HandleLookupRequest(t0, v1peer, lookupRequest(t, 10, target, origin, 5)); err == nil {
		t.Fatal("a master-layout request accepted from a next link")
	}
	// A request for us from a next link is answered in next's layout.
	if err := f.r.HandleLookupRequest(t0, v1other, marshal(t, wire.LookupRequestV1{RequestID: 11, Target: f.self, Origin: origin, TTL: 3})); err != nil {
		t.Fatal(err)
	}
	out = f.links.take()
	if len(out) != 1 || out[0].to != v1other {
		t.Fatalf("answer sent %+v", out)
	}
	ans, err := wire.ParseLookupResponseV1(out[0].msg)
	if err != nil || ans.Target != f.self {
		t.Fatalf("answer %+v %v", ans, err)
	}
	if err := f.id.PublicKey().Verify(ans.ProofBytes(nil), ans.Proof); err != nil {
		t.Fatalf("proof: %v", err)
	}
}

// profiledLinks is fakeLinks whose peers in prof declared a next profile.
type profiledLinks struct {
	*fakeLinks
	prof map[identity.NodeAddr]wire.NodeProfile
}

func (l profiledLinks) PeerProfile(p identity.NodeAddr) (wire.NodeProfile, bool) {
	v, ok := l.prof[p]
	return v, ok
}

// Peers that declared a profile other than Full on a next link carry no
// one else's traffic or lookups (docs/next.md §8–10): they are never a
// next hop towards another node nor sent lookups for another target, but
// still get their own; master links' peers (no profile) and Full ones do.
func TestNonFullPeersCarryNoTransit(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	leaf, nonRouting, full, master, target := addr(0x10), addr(0x20), addr(0x30), addr(0x40), addr(0xBB)
	for _, p := range []identity.NodeAddr{leaf, nonRouting, full, master} {
		f.child(p)
		f.flt.add(p, target)
	}
	f.r.links = profiledLinks{f.links, map[identity.NodeAddr]wire.NodeProfile{
		leaf: wire.ProfileLeaf, nonRouting: wire.ProfileNonRouting, full: wire.ProfileFull}}
	if err := f.r.HandleLookupRequest(t0, master, lookupRequest(t, 1, target, addr(0xCC), 5)); err != nil {
		t.Fatal(err)
	}
	var to []identity.NodeAddr
	for _, s := range f.links.take() {
		to = append(to, s.to)
	}
	if len(to) != 2 || to[0] != full || to[1] != master {
		t.Fatalf("lookup forwarded to %v, want the Full and the master peer", to)
	}
	// A lookup for the leaf itself reaches it.
	f.flt.add(leaf, leaf)
	if err := f.r.HandleLookupRequest(t0, master, lookupRequest(t, 2, leaf, addr(0xCC), 5)); err != nil {
		t.Fatal(err)
	}
	if out := f.links.take(); len(out) != 1 || out[0].to != leaf {
		t.Fatalf("lookup for the leaf sent %+v", out)
	}
	// A node behind the leaf: the leaf is the only peer closer to it, and
	// carries no transit, so there is no next hop; were the leaf a master
	// link's peer, it would be the one.
	f.topo.peerCoords[leaf] = path(leaf, f.self)
	f.r.cache.insert(ms(t0), target, path(target, leaf, f.self), 0)
	if hop, _, ok := f.r.findNextHop(ms(t0), target); ok {
		t.Fatalf("next hop %x through a leaf", hop[:1])
	}
	delete(f.r.links.(profiledLinks).prof, leaf)
	if hop, _, ok := f.r.findNextHop(ms(t0), target); !ok || hop != leaf {
		t.Fatalf("without a profile: next hop %x (%v)", hop[:1], ok)
	}
	// The leaf itself is reached directly.
	if hop, step, ok := f.r.findNextHop(ms(t0), leaf); !ok || hop != leaf || step != StepDirectPeer {
		t.Fatalf("next hop to the leaf: %x %v %v", hop[:1], step, ok)
	}
}

// next's Leaf forwards no lookups in transit (counted), though it still
// answers one for itself; next's min_mtu keeps a lookup off links whose
// MTU is below it (0, and an unknown link MTU, pass); a Leaf or a node
// with LookupMinMTU originates requests carrying it.
func TestLeafAndMinMTULookups(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Leaf = true
	f := newFixture(t, cfg)
	up, target := addr(0x10), addr(0xBB)
	f.child(up)
	f.flt.add(up, target)
	if err := f.r.HandleLookupRequest(t0, up, lookupRequest(t, 1, target, addr(0xCC), 5)); err != nil {
		t.Fatal(err)
	}
	if out := f.links.take(); len(out) != 0 || f.r.Stats().Lookup.ReqLeafNotForwarded != 1 {
		t.Fatalf("a leaf forwarded %d, counted %d", len(out), f.r.Stats().Lookup.ReqLeafNotForwarded)
	}

	cfg = DefaultConfig()
	cfg.LookupMinMTU = 1400
	f = newFixture(t, cfg)
	small, big, unknown, from := addr(0x10), addr(0x20), addr(0x30), addr(0x40)
	for _, p := range []identity.NodeAddr{small, big, unknown, from} {
		f.child(p)
		f.flt.add(p, target)
	}
	f.links.peers[big].mtu, f.links.peers[unknown].mtu = 1500, 0
	req := wire.LookupRequest{RequestID: 2, Target: target, Origin: addr(0xCC), TTL: 5, MinMTU: 1400, OriginCoords: wire.CoordsOf(addr(0xCC))}
	if err := f.r.HandleLookupRequest(t0, from, marshal(t, req)); err != nil {
		t.Fatal(err)
	}
	var to []identity.NodeAddr
	for _, s := range f.links.take() {
		to = append(to, s.to)
	}
	if !slices.Equal(to, []identity.NodeAddr{big, unknown}) {
		t.Fatalf("min_mtu 1400 forwarded to %v, want the 1500 and the unknown link", to)
	}
	// Our own request carries LookupMinMTU and skips the 1280 links.
	if out, n := f.r.StartLookup(t0, target); n != 2 {
		t.Fatalf("started %v to %d peers", out, n)
	}
	for _, s := range f.links.take() {
		got, err := wire.ParseLookupRequest(s.msg)
		if err != nil || got.MinMTU != 1400 || s.to == small || s.to == from {
			t.Fatalf("request to %x: min_mtu %d (%v)", s.to[:1], got.MinMTU, err)
		}
	}
}
