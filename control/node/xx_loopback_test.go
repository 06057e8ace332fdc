package node

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/session"
)

// TestXXSessionOnLoopbackEngine: A—B—C on loopback UDP with dataplane
// workers, every node on upstream next's session pattern (XX): the A→C
// session comes up as XX through B, a stream sealed and opened by the
// workers arrives whole, and the session reports in next's layout give
// both ends an RTT.
func TestXXSessionOnLoopbackEngine(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	sc := session.DefaultConfig()
	sc.Patterns = &session.Patterns{Default: session.PatternXX}
	a, b, c := loopChain(t, Options{Session: sc})
	state := func(from, to *loopNode) (session.Info, bool) {
		v, err := from.do(func(time.Time) any {
			in, ok := from.n.core.Sessions().Session(to.n.Identity().NodeAddr())
			if !ok {
				return nil
			}
			return in
		})
		if err != nil || v == nil {
			return session.Info{}, false
		}
		return v.(session.Info), true
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
	for _, p := range [][2]*loopNode{{a, c}, {c, a}} {
		in, ok := state(p[0], p[1])
		if !ok || in.State != session.StateEstablished || in.Pattern != session.PatternXX {
			t.Fatalf("session %+v (%v)", in, ok)
		}
	}
	hasRTT := func(from, to *loopNode) bool {
		v, err := from.do(func(time.Time) any {
			l, ok := from.n.core.SessionMMP(to.n.Identity().NodeAddr())
			if !ok {
				return false
			}
			_, ok = l.SRTT()
			return ok
		})
		return err == nil && v.(bool)
	}
	if !waitFor(20*time.Second, func() bool {
		a.send(udp6(a, c, streamPort, 1000, 100))
		c.send(udp6(c, a, streamPort, 1000, 100))
		return hasRTT(a, c) && hasRTT(c, a)
	}) {
		t.Fatalf("no session RTT from next-layout reports: a %v c %v", hasRTT(a, c), hasRTT(c, a))
	}
	// next's MMP on an XX session: no spin bit, so show_sessions' mmp has
	// no spin_bit_role (a v0 session's keeps it: TestShapesMatchUpstream).
	v, err := a.do(func(time.Time) any { return a.n.sessionsJSON() })
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(v)
	if err != nil || !strings.Contains(string(js), `"srtt_ms"`) || strings.Contains(string(js), "spin_bit_role") {
		t.Errorf("show_sessions of an XX session: %v %s", err, js)
	}
	for _, n := range []*loopNode{a, b, c} {
		n.stop()
	}
	goleak.VerifyNone(t, ignore)
}
