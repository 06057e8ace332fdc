package node

import (
	"testing"
	"time"

	"go.uber.org/goleak"

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
