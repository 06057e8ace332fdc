package peer

import (
	"strings"
	"testing"
	"time"
)

// retryInfo is a's retry entry for b, failing the test when there is none.
func retryInfo(t *testing.T, a, b *simNode) RetryInfo {
	t.Helper()
	var got []RetryInfo
	a.m.Retries(func(r RetryInfo) { got = append(got, r) })
	for _, r := range got {
		if r.NodeAddr == b.id.NodeAddr() {
			return r
		}
	}
	t.Fatalf("no retry entry for the peer (entries %+v)\nlog:\n%s", got, a.logs)
	return RetryInfo{}
}

// TestStaticHostnameResolvesLate: a configured peer whose name does not
// resolve at start stays scheduled on the reconnect backoff (never
// dropped), is resolved again at every attempt, and links up within one
// retry interval of its name starting to resolve.
func TestStaticHostnameResolvesLate(t *testing.T) {
	n := newSimNet(t, 21)
	cfg := DefaultConfig()
	a, b := n.add(1, cfg), n.add(2, cfg)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Alias: "bee",
		Targets: []StaticAddress{{Transport: 1, Addr: "bee.example:2121"}}, AutoReconnect: true})
	if a.resolves != 1 {
		t.Fatalf("resolved %d times at start, want 1", a.resolves)
	}
	r := retryInfo(t, a, b)
	if r.Retries != 1 || r.Err == nil || !strings.Contains(r.Err.Error(), "no such host") || r.Addr != "" {
		t.Fatalf("retry state after a failed resolution: %+v", r)
	}
	if want := n.now.Add(2 * cfg.RetryBase); !r.NextDial.Equal(want) {
		t.Fatalf("first retry at %v, want %v (base·2)", r.NextDial, want)
	}
	// Several attempts with no answer: each resolves again and backs off.
	n.advance(3*time.Minute, time.Second)
	if a.resolves < 4 {
		t.Fatalf("only %d resolutions in 3 minutes", a.resolves)
	}
	r = retryInfo(t, a, b)
	if r.Retries < 4 {
		t.Fatalf("retry count %d after 3 minutes of failures", r.Retries)
	}
	interval := min(cfg.RetryBase<<r.Retries, cfg.RetryMax)
	// The name appears; the next attempt (at most one interval away)
	// finds it.
	n.names["bee.example:2121"] = b.addr
	resolvedAt := n.now
	for a.m.Peer(b.id.NodeAddr()) == nil {
		if n.now.Sub(resolvedAt) > interval {
			t.Fatalf("not linked %v after the name resolved (retry interval %v)\nlog:\n%s", n.now.Sub(resolvedAt), interval, a.logs)
		}
		n.advance(100*time.Millisecond, 100*time.Millisecond)
	}
	linked(t, a, b)
	if got := a.m.Peer(b.id.NodeAddr()).Addr; got != b.addr {
		t.Errorf("linked at %v, want the resolved %v", got, b.addr)
	}
	var left []RetryInfo
	a.m.Retries(func(r RetryInfo) { left = append(left, r) })
	if len(left) != 0 {
		t.Errorf("retry entries left after linking: %+v", left)
	}
}

// TestStaticHostnameFollowsMove: after the link dies, the reconnect
// resolves the name again and dials the address it now names.
func TestStaticHostnameFollowsMove(t *testing.T) {
	n := newSimNet(t, 22)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	n.names["bee.example:2121"] = b.addr
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(),
		Targets: []StaticAddress{{Transport: 1, Addr: "bee.example:2121"}}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	// b moves: same key at a new address, and the name follows it.
	delete(n.nodes, b.addr)
	b3 := n.addWithIdentity(3, DefaultConfig(), b.id)
	n.names["bee.example:2121"] = b3.addr
	n.advance(2*time.Minute, time.Second)
	linked(t, a, b3)
	if got := a.m.Peer(b.id.NodeAddr()).Addr; got != b3.addr {
		t.Errorf("reconnected to %v, want the name's new address %v", got, b3.addr)
	}
	if a.resolves < 2 {
		t.Errorf("resolved %d times, want once per dial attempt", a.resolves)
	}
}

// TestStaticResolutionAnsweredLater: while a resolution is under way the
// peer is not resolved again; its answer dials, and an answer for a peer
// not being resolved is ignored.
func TestStaticResolutionAnsweredLater(t *testing.T) {
	n := newSimNet(t, 23)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.deferResolve = true
	targets := []StaticAddress{{Transport: 1, Addr: "bee.example:2121"}}
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Targets: targets, AutoReconnect: true})
	n.advance(20*time.Second, time.Second)
	if a.resolves != 1 || len(n.queue) != 0 || a.m.PeerCount() != 0 {
		t.Fatalf("resolves %d queued %d peers %d while the first resolution is pending", a.resolves, len(n.queue), a.m.PeerCount())
	}
	// A stray answer for a peer nobody asked about changes nothing.
	a.m.StaticResolved(n.now, a.id.NodeAddr(), Resolution{Candidates: []Candidate{a.candidate(b)}})
	if len(n.queue) != 0 {
		t.Fatal("an unasked-for resolution dialled")
	}
	n.names["bee.example:2121"] = b.addr
	a.m.StaticResolved(n.now, b.id.NodeAddr(), n.resolve(targets))
	n.deliver()
	linked(t, a, b)
	// A second answer to the same (finished) resolution is ignored.
	a.m.StaticResolved(n.now, b.id.NodeAddr(), n.resolve(targets))
	if len(n.queue) != 0 {
		t.Error("a duplicate answer dialled again")
	}
}
