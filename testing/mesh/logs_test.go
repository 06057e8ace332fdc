package mesh

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/wire"
)

// logBuffer collects the text lines of every node.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(l.b.String(), "\n")
}

// find is the first line of node (−1: any) at level with msg and every
// field key; "" when there is none.
func (l *logBuffer) find(node int, level, msg string, fields []string) string {
	for _, ln := range l.lines() {
		i := strings.Index(ln, ": "+msg)
		if i < 0 || !strings.Contains(ln[:i], " "+level+" ") {
			continue
		}
		rest := ln[i+2+len(msg):]
		if rest != "" && rest[0] != ' ' {
			continue // a longer message with this one as its prefix
		}
		if node >= 0 && !strings.Contains(rest, fmt.Sprintf(" node=%d", node)) {
			continue
		}
		ok := true
		for _, f := range fields {
			if !strings.Contains(rest, " "+f+"=") {
				ok = false
				break
			}
		}
		if ok {
			return ln
		}
	}
	return ""
}

// upstreamLine is one message upstream's test harness or operators grep
// for: the node that must log it (−1: any), its level, text and fields.
type upstreamLine struct {
	node   int
	level  string
	msg    string
	fields []string
}

// TestUpstreamLogMessages drives a chain A—B—C—D with E on C through
// upstream's logged events — links up, a parent switch, MMP reports,
// discovery (found, deduplicated, bloom miss, backoff, retries, time-out),
// sessions, link and session rekeys, congestion, a bad FMP version, two
// nodes crashing — and checks each message upstream's harness greps for
// appears, at upstream's level, with upstream's fields, from the node the
// event happened on. Lines are in the daemon's text format.
func TestUpstreamLogMessages(t *testing.T) {
	buf := &logBuffer{}
	h := logging.New(buf, logging.Options{Level: logging.LevelTrace})
	pc := peer.DefaultConfig()
	pc.RekeyEnabled, pc.RekeyAfter = true, 2*time.Minute
	sc := session.DefaultConfig()
	sc.RekeyEnabled, sc.RekeyAfter = true, 2*time.Minute
	rc := route.DefaultConfig()
	rc.LookupBackoffBase, rc.LookupBackoffMax = 30*time.Second, 5*time.Minute
	net := New(Options{Seed: 14, Log: slog.New(h), Peer: pc, Session: sc, Route: rc})
	nodes := net.AddNodes(5)
	a, b, c, d, e := nodes[0], nodes[1], nodes[2], nodes[3], nodes[4]
	net.Connect(a, b, 5*time.Millisecond, 0)
	bc := net.Connect(b, c, 5*time.Millisecond, 0)
	net.Connect(c, d, 5*time.Millisecond, 0)
	net.Connect(c, e, 5*time.Millisecond, 0)
	if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
		t.Fatal("mesh not converged")
	}
	net.Run(40 * time.Second) // filters settle; one MMP log interval

	// A session A→C: no coordinates yet, so discovery first.
	a.Core.LearnIdentity(c.ID.PublicKey())
	for i := range 5 {
		if err := a.Core.Send(net.Now(), c.ID.NodeAddr(), 40000, 7, fmt.Appendf(nil, "hello %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	net.Run(5 * time.Second)
	// Discovery: D found (its coordinates stay cached at A), a second
	// lookup while the first is pending, a stranger nobody's filter
	// holds (a bloom miss, then suppressed by the backoff it recorded).
	if out := a.Core.StartLookup(net.Now(), d.ID.PublicKey()); out != route.StartSent {
		t.Fatalf("lookup of D: %v", out)
	}
	if out := a.Core.StartLookup(net.Now(), d.ID.PublicKey()); out != route.StartDeduplicated {
		t.Fatalf("second lookup of D: %v", out)
	}
	stranger, err := identity.Generate(rngReader{net.rng})
	if err != nil {
		t.Fatal(err)
	}
	if out := a.Core.StartLookup(net.Now(), stranger.PublicKey()); out != route.StartBloomMiss {
		t.Fatalf("lookup of a stranger: %v", out)
	}
	if out := a.Core.StartLookup(net.Now(), stranger.PublicKey()); out != route.StartSuppressed {
		t.Fatalf("second lookup of a stranger: %v", out)
	}
	// A frame of an FMP version nobody speaks.
	bad := make([]byte, 64)
	bad[0] = 0xF0 | wire.FMPPhaseEstablished
	a.Core.HandlePacket(net.Now(), 1, b.Addr, bad)

	// Traffic both ways through link and session rekeys (2 min), then
	// through a lossy B—C link until B sees it congested.
	for range 200 {
		a.Core.Send(net.Now(), c.ID.NodeAddr(), 40000, 7, []byte("ping"))
		c.Core.Send(net.Now(), a.ID.NodeAddr(), 40000, 7, []byte("pong"))
		net.Run(time.Second)
	}
	bc.Loss = 0.10
	if _, ok := net.RunUntil(func() bool {
		for range 100 {
			a.Core.Send(net.Now(), c.ID.NodeAddr(), 40000, 7, make([]byte, 100))
			net.Run(time.Millisecond)
		}
		return buf.find(1, "DEBUG", "Congestion detected, CE flag set on forwarded packet", nil) != ""
	}, 5*time.Minute); !ok {
		t.Error("B never judged B—C congested")
	}
	bc.Loss = 0
	net.Run(10 * time.Second)

	// D and E crash. A opens a session to D (cached coordinates: the
	// setup goes out and is never answered) and looks E up (still in the
	// filters: every attempt goes out, none is answered). C's links to
	// them die, and C keeps redialling.
	d.Crash()
	e.Crash()
	a.Core.LearnIdentity(d.ID.PublicKey())
	if err := a.Core.Send(net.Now(), d.ID.NodeAddr(), 40000, 7, []byte("anyone?")); err != nil {
		t.Fatal(err)
	}
	if out := a.Core.StartLookup(net.Now(), e.ID.PublicKey()); out != route.StartSent {
		t.Fatalf("lookup of E: %v", out)
	}
	net.Run(3 * time.Minute)

	want := []upstreamLine{
		{-1, "DEBUG", "Connection initiated", []string{"peer", "transport_id", "remote_addr", "link_id", "our_index"}},
		{-1, "INFO", "Peer promoted to active", []string{"peer"}},
		{-1, "INFO", "Parent switched, invalidated downstream coord cache entries, announcing to all peers",
			[]string{"new_parent", "new_seq", "new_root", "depth"}},
		{-1, "DEBUG", "MMP link metrics", []string{"peer", "rtt", "loss", "jitter", "goodput", "tx_pkts", "rx_pkts"}},
		{0, "DEBUG", "Failed to initiate session, trying discovery", []string{"dest", "error"}},
		{0, "DEBUG", "Discovery lookup initiated", []string{"request_id", "target", "ttl", "peer_count", "total_peers"}},
		{0, "INFO", "Discovery succeeded, proof verified, route cached", []string{"request_id", "target", "depth", "path_mtu"}},
		{0, "INFO", "Session established (initiator, XK)", []string{"src"}},
		{2, "INFO", "Session established (responder, XK)", []string{"src"}},
		{0, "DEBUG", "MMP session metrics", []string{"session", "rtt", "loss", "jitter", "goodput", "mtu", "tx_pkts", "rx_pkts"}},
		{0, "DEBUG", "Discovery lookup deduplicated, already pending", []string{"target_node"}},
		{0, "DEBUG", "Discovery skipped, target not in any peer bloom filter", []string{"target_node"}},
		{0, "DEBUG", "Discovery lookup suppressed by backoff", []string{"target_node", "failures"}},
		{0, "DEBUG", "Unknown FMP version, dropping", []string{"version", "transport_id"}},
		{-1, "DEBUG", "Rekey cutover complete (initiator), K-bit flipped", []string{"peer"}},
		{-1, "DEBUG", "Peer new-epoch frame authenticated, K-bit flip promoting new session", []string{"peer"}},
		{-1, "DEBUG", "FSP rekey cutover complete (initiator), K-bit flipped", []string{"peer"}},
		{-1, "INFO", "Peer FSP new-epoch frame authenticated, FSP rekey cutover complete, promoting new session", []string{"peer"}},
		{1, "DEBUG", "Congestion detected, CE flag set on forwarded packet", []string{"next_hop"}},
		{0, "INFO", "Session handshake timed out, removing", []string{"dest"}},
		{0, "DEBUG", "Discovery retry sent", []string{"target_node", "attempt"}},
		{0, "INFO", "Discovery lookup timed out, destination unreachable", []string{"target_node", "queued_packets", "failures"}},
		{2, "DEBUG", "Peer removed and state cleaned up", []string{"peer", "link_id", "tree_changed"}},
		{2, "DEBUG", "MMP link teardown", []string{"peer", "rtt", "loss", "jitter", "etx", "goodput", "tx_pkts", "tx_bytes", "rx_pkts", "rx_bytes"}},
		{2, "DEBUG", "Handshake connection timed out", []string{"link_id"}},
	}
	for _, w := range want {
		if ln := buf.find(w.node, w.level, w.msg, w.fields); ln == "" {
			t.Errorf("no %s %q from node %d with fields %v", w.level, w.msg, w.node, w.fields)
		} else {
			t.Logf("%s", ln)
		}
	}
	// Display names, not hex, name peers: the short npub.
	if ln := buf.find(0, "INFO", "Session established (initiator, XK)", nil); !strings.Contains(ln, "src="+identity.ShortNpub(c.ID.Npub())) {
		t.Errorf("session line does not name C by its short npub: %s", ln)
	}
}
