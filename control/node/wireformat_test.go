package node

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/peer"
)

func wireOptions(f peer.WireFormat) Options {
	pc := peer.DefaultConfig()
	pc.WireFormat = f
	return Options{Peer: pc}
}

// TestMixedWireFormatsRelay: A speaks only v0 (upstream master's links),
// C only v1 (upstream next's), B both. B links to A over IK and to C
// over XX (its dial to C tries IK first, which C drops and counts, then
// XX), and a session A↔C, still over XK, runs end to end through B in
// both directions, B's dataplane engine opening and relaying the frames
// of both formats. show_peers says which format each of B's links runs.
func TestMixedWireFormatsRelay(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	c := startLoopNode(t, wireOptions(peer.WireV1))
	b := startLoopNode(t, wireOptions(peer.WireAuto), c)
	a := startLoopNode(t, wireOptions(peer.WireV0), b)
	a.n.LearnIdentity(c.n.Identity().PublicKey())
	c.n.LearnIdentity(a.n.Identity().PublicKey())
	warm := udp6(a, c, warmPort, 0, 100)
	if !waitFor(30*time.Second, func() bool {
		a.send(warm)
		return c.warmCount() >= 20
	}) {
		t.Fatalf("A→C through B: C delivered %d packets", c.warmCount())
	}
	back := udp6(c, a, warmPort, 0, 100)
	if !waitFor(30*time.Second, func() bool {
		c.send(back)
		return a.warmCount() >= 20
	}) {
		t.Fatalf("C→A through B: A delivered %d packets", a.warmCount())
	}
	formats := map[string]string{}
	for _, p := range b.n.showPeers().Peers {
		formats[p.Npub] = p.WireFormat + "/" + p.Profile
	}
	if got := formats[a.n.Identity().Npub()]; got != "v0/" {
		t.Errorf("B's link to A: %q, want v0 and no profile", got)
	}
	if got := formats[c.n.Identity().Npub()]; got != "v1/full" {
		t.Errorf("B's link to C: %q, want v1/full", got)
	}
	for _, p := range c.n.showPeers().Peers {
		if p.WireFormat != "v1" {
			t.Errorf("C's link to B runs %s", p.WireFormat)
		}
	}
	mmpLinksOfB(t, b, a, c)
	if s := c.n.Snapshot().PeerStats; s.DropOtherVersion == 0 {
		t.Errorf("C counted none of B's IK msg1s as another version")
	}
	for name, n := range map[string]*loopNode{"a": a, "b": b, "c": c} {
		if s := n.n.Snapshot().PeerStats; s.DropVersionMismatch != 0 || s.DropDecrypt != 0 {
			t.Errorf("%s: version mismatches %d, decrypt failures %d", name, s.DropVersionMismatch, s.DropDecrypt)
		}
	}
	// A burst C→A alone: B receives it as v1 frames, which its engine
	// opens and relays on a worker (the loop would handle them if it
	// could not; A sends B little meanwhile: heartbeats, reports).
	before, delivered := b.engine(), a.warmCount()
	var burst [][]byte
	for i := range 100 {
		burst = append(burst, udp6(c, a, warmPort, uint32(i+1), 100))
	}
	for i := 0; i < len(burst); i += 20 {
		c.send(burst[i : i+20]...)
	}
	if !waitFor(10*time.Second, func() bool { return a.warmCount() >= delivered+90 }) {
		t.Fatalf("C→A burst: A delivered %d of 100", a.warmCount()-delivered)
	}
	after := b.engine()
	if opened := after.FramesOpened - before.FramesOpened; opened < 90 {
		t.Errorf("B's engine opened %d frames for a burst of 100 v1 frames: %+v", opened, after)
	}
	if after.Forwarded-before.Forwarded < 90 {
		t.Errorf("B's engine forwarded %d of them", after.Forwarded-before.Forwarded)
	}
}

// mmpLinksOfB: B's link to A (v0) and to C (v1) both measure an RTT and
// have no loss; show_mmp gives the v0 link master's spin_bit_role and the
// v1 link none, as upstream next does; the v1 link exchanged next's
// reports both ways.
func mmpLinksOfB(t *testing.T, b, a, c *loopNode) {
	t.Helper()
	layers := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, p := range b.n.showMMP()["peers"].([]ctl.MMPPeerJSON) {
			out[p.Peer] = p.LinkLayer
		}
		return out
	}
	ka, kc := a.n.Identity().NodeAddr().String(), c.n.Identity().NodeAddr().String()
	if !waitFor(30*time.Second, func() bool {
		l := layers()
		_, okA := l[ka]["srtt_ms"]
		_, okC := l[kc]["srtt_ms"]
		return okA && okC
	}) {
		t.Fatalf("B measured no RTT on both links: %v", layers())
	}
	l := layers()
	if r, _ := l[ka]["spin_bit_role"].(string); r != "initiator" && r != "responder" {
		t.Errorf("B's v0 link to A: spin_bit_role %q", r)
	}
	if r, ok := l[kc]["spin_bit_role"]; ok {
		t.Errorf("B's v1 link to C: spin_bit_role %v, which next does not have", r)
	}
	for k, name := range map[string]string{ka: "A", kc: "C"} {
		if srtt, _ := l[k]["srtt_ms"].(ctl.Float); !(srtt > 0) {
			t.Errorf("B's link to %s: srtt_ms %v", name, l[k]["srtt_ms"])
		}
		if loss, _ := l[k]["loss_rate"].(ctl.Float); loss != 0 {
			t.Errorf("B's link to %s: loss %v", name, loss)
		}
	}
	var stB, stC mmp.Stats
	for _, p := range b.n.LiveSnapshot().Peers {
		if p.NodeAddr == kc {
			stB = p.MMP.Stats
		}
	}
	for _, p := range c.n.LiveSnapshot().Peers {
		stC = p.MMP.Stats
	}
	if stB.SenderReportsRecv == 0 || stB.ReportsSeen == 0 || stC.SenderReportsRecv == 0 || stC.ReportsSeen == 0 {
		t.Errorf("v1 link B–C: B got %d SenderReports and %d ReceiverReports, C %d and %d",
			stB.SenderReportsRecv, stB.ReportsSeen, stC.SenderReportsRecv, stC.ReportsSeen)
	}
}
