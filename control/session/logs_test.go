package session

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// TestUpstreamSessionLogLines: the session lines upstream's harness
// counts — both ends of an established session, and a datagram that no
// epoch's key opens (a flipped ciphertext byte) — appear at upstream's
// levels with its fields.
func TestUpstreamSessionLogLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(logging.New(&buf, logging.Options{Level: slog.LevelDebug}))
	cfg := DefaultConfig()
	m, a, b := pair(t, 5, cfg)
	a.tbl = New(a.id, noise.Epoch{101}, cfg, a, a, log.With("node", "a"), m.rnd)
	b.tbl = New(b.id, noise.Epoch{102}, cfg, b, b, log.With("node", "b"), m.rnd)
	establish(t, m, a, b)
	var sealed []byte
	for _, p := range a.sent {
		if k, _ := wire.ClassifyFSP(p.b); p.dest == b.addr && k == wire.FSPKindEncrypted {
			sealed = slices.Clone(p.b)
		}
	}
	if sealed == nil {
		t.Fatal("a sent b no encrypted message")
	}
	sealed[len(sealed)-1] ^= 0x80 // the tag no longer matches
	b.tbl.HandleFSP(m.now, a.addr, a.addr, false, sealed)
	for _, want := range []string{
		" INFO fips::node::handlers::session: Session established (initiator, XK) node=a src=",
		" INFO fips::node::handlers::session: Session established (responder, XK) node=b src=",
		"DEBUG fips::node::handlers::session: Session AEAD decryption failed (all epochs) node=b src=",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %q in\n%s", want, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "(all epochs) node=b src="+a.addr.ShortHex()+" counter=") {
		t.Errorf("decryption failure line lacks src or counter:\n%s", buf.String())
	}
}
