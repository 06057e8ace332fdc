package node

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/session"
)

// TestPQSessionOnLoopbackEngine: A—B—C on loopback UDP with dataplane
// workers, A and C PQ-preferred (B only forwards): the A→C session
// upgrades to ML-KEM-derived keys, and a stream sealed and opened by the
// workers on the new keys arrives whole; nothing is left running after.
func TestPQSessionOnLoopbackEngine(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	sc := session.DefaultConfig()
	sc.PQ = session.PQPreferred
	a, b, c := loopChain(t, Options{Session: sc})
	isPQ := func(from, to *loopNode) bool {
		v, err := from.do(func(time.Time) any {
			in, ok := from.n.core.Sessions().Session(to.n.Identity().NodeAddr())
			return ok && in.PQ
		})
		return err == nil && v.(bool)
	}
	if !waitFor(10*time.Second, func() bool { return isPQ(a, c) && isPQ(c, a) }) {
		t.Fatalf("the A→C session did not become post-quantum: a %v c %v", isPQ(a, c), isPQ(c, a))
	}
	var pkts [][]byte
	for i := range 200 {
		pkts = append(pkts, udp6(a, c, streamPort, uint32(i), 500))
	}
	for i := 0; i < len(pkts); i += 20 {
		a.send(pkts[i : i+20]...)
		time.Sleep(5 * time.Millisecond)
	}
	if !waitFor(10*time.Second, func() bool { return c.streamCount() == 200 }) {
		t.Fatalf("C delivered %d of 200 packets", c.streamCount())
	}
	v, err := a.do(func(time.Time) any { return a.n.core.Sessions().Stats() })
	if err != nil {
		t.Fatal(err)
	}
	if st := v.(session.Stats); st.PQUpgrades < 1 || st.PQFallbacks != 0 {
		t.Fatalf("a's session stats: upgrades %d fallbacks %d", st.PQUpgrades, st.PQFallbacks)
	}
	for _, n := range []*loopNode{a, b, c} {
		n.stop()
	}
	goleak.VerifyNone(t, ignore)
}
