package peer

import (
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/wire"
)

// TestDualRekeyLogged: when both ends start a link rekey at once, the
// end with the smaller address keeps its own and logs upstream's "Dual
// rekey initiation: we win" line naming the peer.
func TestDualRekeyLogged(t *testing.T) {
	n := newSimNet(t, 7)
	cfg := DefaultConfig()
	cfg.RekeyEnabled, cfg.RekeyAfter, cfg.RekeyJitter = true, time.Minute, 0
	a, b := n.add(1, cfg), n.add(2, cfg)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	small, large := a, b
	if b.id.NodeAddr().Less(a.id.NodeAddr()) {
		small, large = b, a
	}
	const line = `msg="Dual rekey initiation: we win (smaller addr), dropping their msg1"`
	if _, ok := waitSim(n, 5*time.Minute, func() bool { return strings.Contains(small.logs.String(), line) }); !ok {
		t.Fatalf("no dual-rekey line on the smaller side\nsmall:\n%s\nlarge:\n%s", small.logs, large.logs)
	}
	if strings.Contains(large.logs.String(), line) {
		t.Errorf("the larger address claims the win too:\n%s", large.logs)
	}
	for _, l := range strings.Split(small.logs.String(), "\n") {
		if strings.Contains(l, line) && !strings.Contains(l, " peer=") {
			t.Errorf("dual-rekey line names no peer: %s", l)
		}
	}
	// The link survives: both ends settle on the same session.
	if _, ok := waitSim(n, time.Minute, func() bool {
		pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
		return pa != nil && pb != nil && pa.OurIndex() == pb.TheirIndex() && pa.TheirIndex() == pb.OurIndex()
	}); !ok {
		linked(t, a, b)
	}
}

// TestForgedRekeyMsg2Logged: a msg2 that matches our rekey's index but
// does not authenticate is logged (WARN "Rekey msg2 processing failed",
// peer, error) and changes nothing: the genuine msg2 still completes the
// rekey.
func TestForgedRekeyMsg2Logged(t *testing.T) {
	n := newSimNet(t, 8)
	cfg := DefaultConfig()
	cfg.RekeyEnabled, cfg.RekeyAfter, cfg.RekeyJitter = true, time.Minute, 0
	cfg.LinkDeadTimeout = 10 * time.Minute // the link outlives the cut below
	quiet := cfg
	quiet.RekeyAfter = time.Hour // b answers rekeys but starts none here
	a, b := n.add(1, cfg), n.add(2, quiet)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	before := len(a.msg1s)
	n.setCut(a, b, true)
	if _, ok := waitSim(n, 3*time.Minute, func() bool { return len(a.msg1s) > before }); !ok {
		t.Fatal("a never started a rekey")
	}
	m1, err := wire.ParseFMPMsg1(a.msg1s[len(a.msg1s)-1])
	if err != nil {
		t.Fatal(err)
	}
	forged := make([]byte, wire.FMPMsg2Size)
	if _, err := (wire.FMPMsg2{SenderIndex: 0x1234, ReceiverIndex: m1.SenderIndex, Noise: make([]byte, wire.IKMsg2Size)}).MarshalTo(forged); err != nil {
		t.Fatal(err)
	}
	a.m.HandlePacket(n.now, 1, b.addr, forged)
	found := false
	for _, l := range strings.Split(a.logs.String(), "\n") {
		if strings.Contains(l, `level=WARN msg="Rekey msg2 processing failed"`) {
			found = strings.Contains(l, " peer=npub1") && strings.Contains(l, " error=")
		}
	}
	if !found {
		t.Fatalf("no rekey msg2 failure line with peer and error:\n%s", a.logs)
	}
	cutovers := a.m.Stats().RekeyCutovers
	n.setCut(a, b, false)
	if _, ok := waitSim(n, 3*time.Minute, func() bool { return a.m.Stats().RekeyCutovers > cutovers }); !ok {
		t.Fatalf("the rekey never completed after the forged msg2\n%s", a.logs)
	}
}

// waitSim advances the simulated network in 100 ms ticks until cond
// holds or max passes.
func waitSim(n *simNet, max time.Duration, cond func() bool) (time.Duration, bool) {
	const tick = 100 * time.Millisecond
	for d := time.Duration(0); d < max; d += tick {
		if cond() {
			return d, true
		}
		n.advance(tick, tick)
	}
	return max, cond()
}
