package node

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/pq"
)

// TestEngineLinkPQRekeysLoseNoPacket: the rekey stream of
// TestEngineRekeysLoseNoPacket with both links under link pq required:
// every link rekey is followed by a fresh ML-KEM upgrade and its own
// cutover, which the engine's published tables and receiver indices
// follow as they follow a rekey's; no packet is lost, and every link ends
// post-quantum.
func TestEngineLinkPQRekeysLoseNoPacket(t *testing.T) {
	for _, f := range []peer.WireFormat{peer.WireV0, peer.WireV1} {
		t.Run(f.String(), func(t *testing.T) { engineLinkPQRekeys(t, f) })
	}
}

// engineLinkPQRekeys runs the stream with every link in format f (v1:
// upstream next's XX links, whose post-quantum sessions keep the format).
func engineLinkPQRekeys(t *testing.T, f peer.WireFormat) {
	ignore := goleak.IgnoreCurrent()
	o := rekeyOptions()
	o.Peer.PQ = pq.Required
	o.Peer.WireFormat = f
	a, b, c := engineRekeyStream(t, o, 5)
	for _, n := range []*loopNode{a, b, c} {
		if !waitFor(5*time.Second, func() bool {
			peers := n.n.Snapshot().Peers
			for _, p := range peers {
				if !p.PostQuantum {
					return false
				}
			}
			return len(peers) > 0
		}) {
			t.Errorf("a link of %s is not post-quantum", n.n.Identity().NodeAddr().Short())
		}
		st := n.n.Snapshot().PeerStats
		if st.PQUpgrades < st.RekeyCutovers || st.PQRefused != 0 || st.PQFallbacks != 0 || st.PQConfirmFailed != 0 {
			t.Errorf("link stats: upgrades %d, rekey cutovers %d, refused %d, fallbacks %d, confirm failed %d",
				st.PQUpgrades, st.RekeyCutovers, st.PQRefused, st.PQFallbacks, st.PQConfirmFailed)
		}
		t.Logf("%s: %d post-quantum upgrades, %d classical rekeys", n.n.Identity().NodeAddr().Short(), st.PQUpgrades, st.RekeyCutovers)
	}
	for _, n := range []*loopNode{a, b, c} {
		n.stop()
	}
	goleak.VerifyNone(t, ignore)
}
