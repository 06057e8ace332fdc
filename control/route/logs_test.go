package route

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/logging"
)

// TestUpstreamLookupLogLines: the lookup lines upstream's harness counts
// that need a tree the mesh harness does not build on its own — a target
// only a non-tree peer's filter holds (a lookup we cannot send; a request
// we forward by the non-tree fallback) and a request no peer's filter
// holds — appear at upstream's levels with its fields.
func TestUpstreamLookupLogLines(t *testing.T) {
	var buf bytes.Buffer
	f := newFixture(t, DefaultConfig())
	f.r = New(f.id, DefaultConfig(), f.topo, f.flt, f.links, f.ids,
		slog.New(logging.New(&buf, logging.Options{Level: logging.LevelTrace})), f.rnd)
	tree, side, target, nowhere := addr(0x10), addr(0x20), addr(0x30), addr(0x40)
	f.child(tree)
	f.links.add(side) // a peer, not a tree peer
	f.flt.add(side, target)

	if out, _ := f.r.StartLookup(t0, target); out != StartZeroFanout {
		t.Fatalf("lookup: %v", out)
	}
	if err := f.r.HandleLookupRequest(t0, tree, lookupRequest(t, 7, target, addr(0x50), 8)); err != nil {
		t.Fatalf("forward by fallback: %v", err)
	}
	if err := f.r.HandleLookupRequest(t0, tree, lookupRequest(t, 8, nowhere, addr(0x50), 8)); err == nil {
		t.Fatal("a request no filter holds was forwarded")
	}
	for _, w := range []struct{ level, msg, fields string }{
		{"DEBUG", "Discovery lookup initiated", "request_id= target= ttl=64 peer_count=0 total_peers=2"},
		{"DEBUG", "Discovery failed, no tree peers with bloom match", "target_node="},
		{"DEBUG", "Forwarding LookupRequest via non-tree fallback", "request_id=7 target= ttl=7 peer_count=1"},
		{"TRACE", "No eligible peers to forward LookupRequest", "request_id=8"},
	} {
		found := false
		for _, ln := range strings.Split(buf.String(), "\n") {
			if !strings.Contains(ln, " "+w.level+" fips::node::handlers::lookup: "+w.msg+" ") {
				continue
			}
			found = true
			for _, kv := range strings.Fields(w.fields) {
				if !strings.Contains(ln, " "+kv) {
					t.Errorf("%q lacks %s: %s", w.msg, kv, ln)
				}
			}
		}
		if !found {
			t.Errorf("no %s %q in\n%s", w.level, w.msg, buf.String())
		}
	}
}

// TestLookupProofFailureLogged: a LookupResponse whose proof does not
// verify is upstream's WARN "LookupResponse proof verification failed,
// discarding" with request_id and target.
func TestLookupProofFailureLogged(t *testing.T) {
	f, _, ta, coords, _ := originatorFixture(t)
	var buf bytes.Buffer
	f.r = New(f.id, DefaultConfig(), f.topo, f.flt, f.links, f.ids,
		slog.New(logging.New(&buf, logging.Options{Level: logging.LevelTrace})), f.rnd)
	wrong := mustIdentity(t, newSeeded(8))
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), signedResponse(t, wrong, 701, ta, coords, 1280)); !errors.Is(err, ErrProof) {
		t.Fatalf("wrong key: %v", err)
	}
	if want := " WARN fips::node::handlers::lookup: LookupResponse proof verification failed, discarding request_id=701 target=" +
		ta.ShortHex() + "\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("no %q in:\n%s", want, buf.String())
	}
}
