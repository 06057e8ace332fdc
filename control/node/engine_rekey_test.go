package node

import (
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/session"
)

// rekeyOptions shorten every rekey interval to fractions of a second:
// upstream's floors (rekey.after_secs > 15, a 30 s minimum session age
// before a peer's msg1 counts as a rekey, 30 s of dampening) would make
// 20 rekeys take over ten minutes.
func rekeyOptions() Options {
	pc := peer.DefaultConfig()
	pc.RekeyAfter, pc.RekeyJitter = 1200*time.Millisecond, 0
	pc.RekeyMinAge, pc.RekeyDampening, pc.DrainWindow = 400*time.Millisecond, 400*time.Millisecond, time.Second
	sc := session.DefaultConfig()
	sc.RekeyAfter, sc.RekeyJitter = 1200*time.Millisecond, 0
	sc.CutoverDelay, sc.DrainWindow, sc.Dampening = 200*time.Millisecond, time.Second, 400*time.Millisecond
	return Options{TickInterval: 100 * time.Millisecond, Peer: pc, Session: sc}
}

// linkRekeys is each of n's peers' completed rekeys (cutovers), by peer.
func linkRekeys(n *loopNode) map[string]uint64 {
	out := map[string]uint64{}
	for _, p := range n.n.Snapshot().Peers {
		out[p.NodeAddr] = p.Stats.Rekeys
	}
	return out
}

// TestEngineRekeysLoseNoPacket: a sequenced UDP stream A→C through the
// relay B (B forwarding on its engine worker) while both links and the
// A↔C session are each rekeyed at least 20 times: C receives every
// sequence number exactly once (but for frames B's and C's CoDel
// counted as dropped, should the machine keep a loop from running).
func TestEngineRekeysLoseNoPacket(t *testing.T) {
	engineRekeyStream(t, rekeyOptions(), 20)
}

// engineRekeyStream runs TestEngineRekeysLoseNoPacket's stream on a chain
// started with o until every link end and session end has rekeyed want
// times, checks what C received, and returns the chain.
func engineRekeyStream(t *testing.T, o Options, want uint64) (a, b, c *loopNode) {
	t.Helper()
	a, b, c = loopChain(t, o)
	e0 := b.engine()
	// The counts since the stream starts: each end of a link counts its
	// cutovers; a session's ends count theirs.
	type counts struct{ ab, ba, bc, cb, sa, sc uint64 }
	get := func() counts {
		la, lb, lc := linkRekeys(a), linkRekeys(b), linkRekeys(c)
		an, bn, cn := a.n.Identity().NodeAddr().String(), b.n.Identity().NodeAddr().String(), c.n.Identity().NodeAddr().String()
		return counts{ab: la[bn], ba: lb[an], bc: lb[cn], cb: lc[bn],
			sa: a.n.Snapshot().SessStats.Cutovers, sc: c.n.Snapshot().SessStats.Cutovers}
	}
	c0 := get()
	aqm0 := b.n.Snapshot().AQMDrops + c.n.Snapshot().AQMDrops
	least := func(now counts) uint64 {
		return slices.Min([]uint64{now.ab - c0.ab, now.ba - c0.ba, now.bc - c0.bc, now.cb - c0.cb, now.sa - c0.sa, now.sc - c0.sc})
	}

	// 200 packets a second, 5 every 25 ms: far below what loopback and
	// the nodes carry, so a loss is the rekeys'.
	start := time.Now()
	var seq uint32
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(3 * time.Minute)
	var now counts
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("after %v: rekeys since the stream started %+v (from %+v), want %d of each",
				time.Since(start).Round(time.Second), get(), c0, want)
		}
		burst := make([][]byte, 5)
		for i := range burst {
			burst[i] = udp6(a, c, streamPort, seq, 200)
			seq++
		}
		a.send(burst...)
		if seq%200 == 0 {
			now = get()
			done = least(now) >= want
		}
	}
	// A second more of stream after the last counted rekey, so the last
	// cutovers' drain windows carry traffic too.
	for range 40 {
		<-tick.C
		burst := make([][]byte, 5)
		for i := range burst {
			burst[i] = udp6(a, c, streamPort, seq, 200)
			seq++
		}
		a.send(burst...)
	}
	took := time.Since(start)
	waitFor(5*time.Second, func() bool { return c.streamCount() == int(seq) })

	c.mu.Lock()
	var missing, dups []uint32
	for i := range seq {
		switch n := c.seen[i]; {
		case n == 0:
			missing = append(missing, i)
		case n > 1:
			dups = append(dups, i)
		}
	}
	c.mu.Unlock()
	e1 := b.engine()
	end := get()
	t.Logf("%d packets A→C in %v; rekeys during the stream: link A–B %d/%d, link B–C %d/%d, session A↔C %d/%d (each end); "+
		"b's worker forwarded %d, upcalled %d, dropped %d, %d route misses",
		seq, took.Round(time.Millisecond), end.ab-c0.ab, end.ba-c0.ba, end.bc-c0.bc, end.cb-c0.cb, end.sa-c0.sa, end.sc-c0.sc,
		e1.Forwarded-e0.Forwarded, e1.Upcalls-e0.Upcalls, e1.FramesDropped-e0.FramesDropped, e1.ForwardMisses-e0.ForwardMisses)
	// CoDel on a loop that the loaded machine keeps from running for
	// over 100 ms drops by design: not the rekeys' losses.
	aqm := b.n.Snapshot().AQMDrops + c.n.Snapshot().AQMDrops - aqm0
	if aqm > 0 {
		t.Logf("B's and C's receive-queue CoDel dropped %d frames during the stream", aqm)
	}
	if uint64(len(missing)) > aqm {
		t.Errorf("C is missing %d of %d sequence numbers, %d beyond the queue-management drops: %v",
			len(missing), seq, uint64(len(missing))-aqm, missing[:min(len(missing), 20)])
	}
	if len(dups) > 0 {
		t.Errorf("C received %d sequence numbers more than once: %v", len(dups), dups[:min(len(dups), 20)])
	}
	if least(end) < want {
		t.Errorf("rekeys during the stream %+v from %+v: want %d of each", end, c0, want)
	}
	if fw := e1.Forwarded - e0.Forwarded; fw < uint64(seq)/2 {
		t.Errorf("b's worker forwarded %d of %d datagrams: the stream did not run through the engine", fw, seq)
	}
	return a, b, c
}
