package mesh

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/session"
)

// pqChain is a 3-node chain a — relay — b whose ends run the post-quantum
// policies ma and mb (the relay: off; it only forwards), logging into buf.
func pqChain(t *testing.T, seed uint64, ma, mb session.PQMode, buf *bytes.Buffer) (*Net, []*Node) {
	t.Helper()
	log := slog.New(logging.New(buf, logging.Options{Level: slog.LevelInfo}))
	net := New(Options{Seed: seed, Log: log, Core: func(i int, o *node.CoreOptions) {
		o.Session = session.DefaultConfig()
		o.Session.PQTimeout = 5 * time.Second
		switch i {
		case 0:
			o.Session.PQ = ma
		case 2:
			o.Session.PQ = mb
		}
	}})
	nodes := net.AddNodes(3)
	net.Connect(nodes[0], nodes[1], 5*time.Millisecond, 0)
	net.Connect(nodes[1], nodes[2], 5*time.Millisecond, 0)
	return net, nodes
}

func pqOf(n, peer *Node) bool {
	in, ok := n.Core.Sessions().Session(peer.ID.NodeAddr())
	return ok && in.PQ
}

// TestPQThroughRelay: fips-go PQ ↔ fips-go PQ across a relay — the
// session becomes post-quantum at once and after every rekey, and every
// datagram arrives; the relay sees only sealed session messages.
func TestPQThroughRelay(t *testing.T) {
	var buf bytes.Buffer
	net, nodes := pqChain(t, 31, session.PQPreferred, session.PQPreferred, &buf)
	a, relay, b := nodes[0], nodes[1], nodes[2]
	if got := sessionRun(t, net, nodes, a, b, 12); got != 12 {
		t.Fatalf("%d of 12 datagrams arrived", got)
	}
	if !pqOf(a, b) || !pqOf(b, a) {
		t.Fatalf("not post-quantum: a %v b %v", pqOf(a, b), pqOf(b, a))
	}
	// Five minutes of traffic: XK rekeys every ~2 minutes, each upgraded.
	for i := range 300 {
		if err := a.Core.Send(net.Now(), b.ID.NodeAddr(), 40000, 7, []byte(fmt.Sprintf("later %d", i))); err != nil {
			t.Fatal(err)
		}
		net.Run(time.Second)
	}
	got := 0
	for _, d := range b.Received {
		if strings.HasPrefix(string(d.Payload), "later ") {
			got++
		}
	}
	if got != 300 {
		t.Fatalf("%d of 300 later datagrams arrived", got)
	}
	sa, sb := a.Core.Sessions().Stats(), b.Core.Sessions().Stats()
	if sa.PQUpgrades < 3 || sb.PQUpgrades < 3 || !pqOf(a, b) {
		t.Fatalf("upgrades a %d b %d (cutovers %d %d)", sa.PQUpgrades, sb.PQUpgrades, sa.Cutovers, sb.Cutovers)
	}
	if sa.PQFallbacks+sb.PQFallbacks+sa.PQRefused+sb.PQRefused != 0 {
		t.Fatalf("fallbacks/refusals a %+v b %+v", sa, sb)
	}
	if relay.Core.Sessions().Len() != 0 {
		t.Fatal("the relay holds a session")
	}
	t.Logf("upgrades a=%d b=%d, cutovers a=%d b=%d", sa.PQUpgrades, sb.PQUpgrades, sa.Cutovers, sb.Cutovers)
}

// TestPQPreferredToClassicThroughRelay: a PQ-preferred node and a classic
// one (pq off: the upstream behaviour, the unknown type dropped) — the
// session falls back, counted, and traffic flows both ways.
func TestPQPreferredToClassicThroughRelay(t *testing.T) {
	var buf bytes.Buffer
	net, nodes := pqChain(t, 32, session.PQPreferred, session.PQOff, &buf)
	a, b := nodes[0], nodes[2]
	if got := sessionRun(t, net, nodes, a, b, 12); got != 12 {
		t.Fatalf("%d of 12 datagrams arrived", got)
	}
	net.Run(10 * time.Second)
	if err := b.Core.Send(net.Now(), a.ID.NodeAddr(), 7, 40000, []byte("reply")); err != nil {
		t.Fatal(err)
	}
	net.Run(5 * time.Second)
	if n := len(a.Received); n != 1 {
		t.Fatalf("reply: %d datagrams", n)
	}
	sa, sb := a.Core.Sessions().Stats(), b.Core.Sessions().Stats()
	if sa.PQFallbacks != 1 || pqOf(a, b) || sb.UnknownMessageType == 0 {
		t.Fatalf("fallbacks %d, pq %v, classic peer's unknown types %d", sa.PQFallbacks, pqOf(a, b), sb.UnknownMessageType)
	}
	if n := strings.Count(buf.String(), "Session stays classical"); n != 1 {
		t.Fatalf("%d fallback lines", n)
	}
}

// TestPQRequiredToClassicThroughRelay: a PQ-required node refuses a
// classic one — nothing travels classically, and the session is torn down
// with one line and a counter.
func TestPQRequiredToClassicThroughRelay(t *testing.T) {
	var buf bytes.Buffer
	net, nodes := pqChain(t, 33, session.PQRequired, session.PQOff, &buf)
	a, b := nodes[0], nodes[2]
	if got := sessionRun(t, net, nodes, a, b, 3); got != 0 {
		t.Fatalf("%d datagrams travelled classically under pq required", got)
	}
	sa := a.Core.Sessions().Stats()
	if sa.PQRefused != 1 {
		t.Fatalf("refused %d", sa.PQRefused)
	}
	if _, ok := a.Core.Sessions().Session(b.ID.NodeAddr()); ok {
		t.Fatal("the session survived")
	}
	if n := strings.Count(buf.String(), "pq is required and the peer did not upgrade"); n != 1 {
		t.Fatalf("%d teardown lines:\n%s", n, buf.String())
	}
}
