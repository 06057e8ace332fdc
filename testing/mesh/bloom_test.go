package mesh

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fips-go/fips/control/peer"
)

// filtersCover reports whether every node's inbound peer filters together
// contain every other node: what a bloom-routed lookup relies on.
func filtersCover(nodes []*Node) (bool, string) {
	for _, nd := range nodes {
		b := nd.Core.Bloom()
		for _, other := range nodes {
			if other == nd {
				continue
			}
			found := false
			nd.Core.Peers().Peers(func(p *peer.Peer) {
				if f, ok := b.InboundFilter(p.NodeAddr); ok && f.Contains(other.ID.NodeAddr()) {
					found = true
				}
			})
			if !found {
				return false, fmt.Sprintf("%s: no peer filter holds %s", nd.ID.NodeAddr().Short(), other.ID.NodeAddr().Short())
			}
		}
	}
	return true, ""
}

// TestBloomFiltersCoverTheMeshAfterConvergence builds small meshes with
// cycles (the demo's diamond among them) under many seeds and random link
// latencies, and requires that once the tree has converged every node's
// peer filters come to hold every other node. A filter that arrives
// before the TreeAnnounce making its sender our child must still be
// passed on once it does.
func TestBloomFiltersCoverTheMeshAfterConvergence(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		net := New(Options{Seed: seed, TickInterval: 100 * time.Millisecond})
		rng := rand.New(rand.NewPCG(seed, 7))
		// Sub-millisecond links included; never zero: an RTT that is
		// always 0 ms is never measured, so the link never becomes a
		// parent candidate (upstream's rule), which is not what this
		// test is about.
		lat := func() time.Duration { return time.Duration(250+rng.IntN(9750)) * time.Microsecond }
		var nodes []*Node
		if seed%2 == 0 {
			nodes = net.AddNodes(4) // the diamond: 0—1, 0—2, 1—3, 2—3
			net.Connect(nodes[0], nodes[1], lat(), 0)
			net.Connect(nodes[0], nodes[2], lat(), 0)
			net.Connect(nodes[1], nodes[3], lat(), 0)
			net.Connect(nodes[2], nodes[3], lat(), 0)
		} else {
			nodes = randomMesh(net, 7, 3, seed)
		}
		if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, time.Minute); !ok {
			_, why := converged(nodes)
			t.Fatalf("seed %d: tree not converged: %s", seed, why)
		}
		// Filters follow the tree within a few debounce rounds; give them
		// far more than that.
		net.Run(20 * time.Second)
		if ok, why := filtersCover(nodes); !ok {
			t.Fatalf("seed %d: 20 s after the tree converged: %s", seed, why)
		}
	}
}
