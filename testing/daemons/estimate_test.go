//go:build unix

package daemons

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

func addrOf(t *testing.T, s string) identity.NodeAddr {
	t.Helper()
	b, err := hex.DecodeString(s)
	var a identity.NodeAddr
	if err != nil || len(b) != len(a) {
		t.Fatalf("bad address %q: %v", s, err)
	}
	copy(a[:], b)
	return a
}

// TestFilterEstimateWithCoincidingBits: CI's relay B in a three-node
// chain had the address below, whose five bit indices are two
// (h2 ≡ 4096 mod 8192); a's complete filter from B {B, C} estimated
// 1.4, which a "count minus 0.5" convergence test never accepted.
func TestFilterEstimateWithCoincidingBits(t *testing.T) {
	b := addrOf(t, "8bda78fe10250b54444216b04ebba92f")
	c := addrOf(t, "460c079764c746412d58087083786b46")
	distinct := map[uint32]bool{}
	for _, i := range wire.BloomBits(nil, b, wire.BloomHashCount) {
		distinct[i] = true
	}
	if len(distinct) != 2 {
		t.Fatalf("b sets %d distinct bits, want 2", len(distinct))
	}
	got := FilterEstimate(b, c)
	if got >= 1.5 || got <= 1.0 {
		t.Errorf("FilterEstimate(b, c) = %.3f, want about 1.4 (7 bits)", got)
	}
	if one := FilterEstimate(c); math.Abs(one-1) > 0.01 {
		t.Errorf("FilterEstimate(c) = %.3f, want 1", one)
	}
	if none := FilterEstimate(); none != 0 {
		t.Errorf("FilterEstimate() = %v, want 0", none)
	}
}
