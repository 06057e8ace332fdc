package session

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
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

// TestMtuExceededLogged: an MtuExceeded that lowers a session's path MTU
// is upstream's INFO "Path MTU decreased via reactive MtuExceeded signal"
// (dest, old_mtu, new_mtu, reporter); one below the floor is WARN
// "MtuExceeded reports a path MTU below the actionable floor; ignoring"
// (dest, reporter, bottleneck_mtu, floor); a looser one logs nothing.
func TestMtuExceededLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(logging.New(&buf, logging.Options{Level: slog.LevelDebug}))
	cfg := DefaultConfig()
	m, a, b := pair(t, 15, cfg)
	a.tbl = New(a.id, noise.Epoch{101}, cfg, a, a, log, m.rnd)
	establish(t, m, a, b)
	in, _ := a.tbl.Session(b.addr)
	old := in.PathMTU
	rep := identity.NodeAddr{0x42}
	a.hops = map[identity.NodeAddr]identity.NodeAddr{b.addr: rep} // the relay that reports
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 1000))
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 1200))
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 255))
	out := buf.String()
	for _, want := range []string{
		fmt.Sprintf(" INFO fips::node::handlers::session: Path MTU decreased via reactive MtuExceeded signal dest=%s old_mtu=%d new_mtu=1000 reporter=%s\n",
			b.addr.ShortHex(), old, rep),
		fmt.Sprintf(" WARN fips::node::handlers::session: MtuExceeded reports a path MTU below the actionable floor; ignoring dest=%s reporter=%s bottleneck_mtu=255 floor=256\n",
			b.addr.ShortHex(), rep),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "new_mtu=1200") {
		t.Errorf("a looser MTU is logged as a decrease:\n%s", out)
	}
}

// TestRekeyExpiredLogged: a session rekey the peer started whose msg3
// never arrives is abandoned after the handshake timeout with upstream's
// INFO "FSP rekey armed by peer expired without msg3, session retained"
// (peer, age_ms), and the session stays up.
func TestRekeyExpiredLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(logging.New(&buf, logging.Options{Level: slog.LevelDebug}))
	cfg := DefaultConfig()
	cfg.RekeyEnabled = true
	m, a, b := pair(t, 21, cfg)
	quiet := cfg
	quiet.RekeyAfter = time.Hour // b answers a's rekeys and starts none
	b.tbl = New(b.id, noise.Epoch{102}, quiet, b, b, log, m.rnd)
	establish(t, m, a, b)
	m.drop = func(p packet) bool { // every msg3 a sends from now on
		k, _ := wire.ClassifyFSP(p.b)
		return p.src == a.addr && k == wire.FSPKindMsg3
	}
	const want = " INFO fips::node::handlers::session: FSP rekey armed by peer expired without msg3, session retained peer="
	for step := 0; step < 600 && !strings.Contains(buf.String(), want); step++ {
		m.advance(time.Second)
		for _, p := range [][2]*node{{a, b}, {b, a}} { // traffic keeps the session from idling out
			if err := p[0].tbl.Send(m.now, p[1].addr, 1, 1, []byte{1}); err != nil {
				t.Fatal(err)
			}
		}
		m.run()
		m.tickAll()
	}
	out := buf.String()
	if !strings.Contains(out, want+b.tbl.name(a.addr).LogValue().String()+" age_ms=") {
		t.Fatalf("no %q naming a in:\n%s\na %+v\nb %+v", want, out, a.tbl.Stats(), b.tbl.Stats())
	}
	if b.tbl.Stats().RekeyExpired == 0 {
		t.Error("expiry not counted")
	}
	if in, ok := b.tbl.Session(a.addr); !ok || in.State != StateEstablished {
		t.Errorf("session after the expiry: %+v %v", in, ok)
	}
}
