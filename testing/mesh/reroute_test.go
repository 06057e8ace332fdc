package mesh

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/route"
)

// TestSessionRecoversWhenTheTreeMovesUnderIt: a 5-node ring whose root A
// sends to C, two hops away, every 200 ms; C never answers. The root's
// link on C's tree path is cut. Once the link is declared dead and the
// tree has re-formed around the ring, A's cached coordinates for C point
// into a branch that no longer exists and no transit node can tell A (it
// is the source). A must look C up again rather than stay dark until the
// session idles out 90 s after its last packet.
func TestSessionRecoversWhenTheTreeMovesUnderIt(t *testing.T) {
	var relookups uint64
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			net := New(Options{Seed: seed})
			ring := net.AddNodes(5)
			for i := range ring {
				net.Connect(ring[i], ring[(i+1)%5], 2*time.Millisecond, 0)
			}
			if _, ok := net.RunUntil(func() bool { ok, _ := converged(ring); return ok }, time.Minute); !ok {
				t.Fatal("ring not converged")
			}
			// Rotate so that ring[0] is the root.
			root := slices.IndexFunc(ring, func(n *Node) bool { return n.Core.Tree().IsRoot() })
			ring = append(ring[root:], ring[:root]...)
			a := ring[0]
			// C: two hops from the root, reached through its first hop.
			c, first := ring[2], ring[1]
			if coords := c.Core.Tree().Coords(); len(coords) != 3 || coords[1] != first.ID.NodeAddr() {
				c, first = ring[3], ring[4]
			}
			if coords := c.Core.Tree().Coords(); len(coords) != 3 || coords[1] != first.ID.NodeAddr() {
				t.Skipf("no node two hops below the root on either side (coords %v)", coords)
			}
			net.Run(10 * time.Second) // filters settle

			a.Core.LearnIdentity(c.ID.PublicKey())
			noRoute := 0
			send := func(i int) {
				// While the path is gone a send may fail with no route.
				if err := a.Core.Send(net.Now(), c.ID.NodeAddr(), 40000, 7, []byte(fmt.Sprint(i))); errors.Is(err, route.ErrNoRoute) {
					noRoute++
				} else if err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			i := 0
			for ; i < 25; i++ {
				send(i)
				net.Run(200 * time.Millisecond)
			}
			if len(c.Received) == 0 {
				t.Fatal("nothing reached C before the cut")
			}
			net.Link(a, first).SetUp(false)
			cut, before := net.Now(), len(c.Received)
			var resumed time.Time
			for ; i < 25+5*120 && resumed.IsZero(); i++ {
				send(i)
				net.Run(200 * time.Millisecond)
				if len(c.Received) > before {
					resumed = c.Received[before].At
				}
			}
			if resumed.IsZero() {
				t.Fatalf("nothing reached C in the 120 s after the cut (C's coords now %v)", short(c.Core.Tree().Coords()))
			}
			gap := resumed.Sub(cut)
			t.Logf("delivery resumed %.1f s after the cut (link-dead detection is 30 s); C now at %v; %d sends found no route",
				gap.Seconds(), short(c.Core.Tree().Coords()), noRoute)
			// Link-dead detection (30 s) and re-forming the tree bound the
			// gap; an idle-out would be 90 s after the last delivery.
			if gap >= 60*time.Second {
				t.Errorf("delivery resumed only %v after the cut", gap)
			}
			relookups += a.Core.NoRouteLookups()
		})
	}
	// In some runs C's own traffic refreshes A's view first; in others
	// only A's lookup does. The mechanism must have been exercised.
	if relookups == 0 {
		t.Error("no run had A look C up again after finding no route")
	}
}

func short(a []identity.NodeAddr) []string {
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = x.Short()[:4]
	}
	return out
}
