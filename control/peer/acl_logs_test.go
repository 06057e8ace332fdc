package peer

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
)

// TestACLFileLogs: upstream's ACL file lines under fips::node::acl — a
// line with two tokens is "Expected one ACL entry per line, skipping"
// (path, line, content), an unknown token "Skipping invalid ACL entry"
// (path, line, entry, error), an unreadable file "Failed to read ACL
// file" (path, error); a load is DEBUG "Loaded peer ACL files" with the
// entry counts, and a later change INFO "Reloaded peer ACL files".
func TestACLFileLogs(t *testing.T) {
	dir := t.TempDir()
	allow, deny := filepath.Join(dir, "peers.allow"), filepath.Join(dir, "peers.deny")
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	npub := id.Npub()
	if err := os.WriteFile(allow, []byte(npub+"\n"+npub+" extra\nnobody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(logging.New(&buf, logging.Options{Level: slog.LevelDebug}))
	a := &ACL{AllowFile: allow, DenyFile: deny}
	if !a.Reload(log) {
		t.Fatal("nothing loaded")
	}
	out := buf.String()
	for _, want := range []string{
		" WARN fips::node::acl: Expected one ACL entry per line, skipping path=" + allow + " line=2 content=" + npub + " extra\n",
		" WARN fips::node::acl: Skipping invalid ACL entry path=" + allow + " line=3 entry=nobody error=neither an npub nor a known alias\n",
		" DEBUG fips::node::acl: Loaded peer ACL files allow_entries=1 deny_entries=0 allow_all=false deny_all=false\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Reloaded peer ACL files") {
		t.Errorf("the first load is reported as a reload:\n%s", out)
	}

	buf.Reset()
	if err := os.WriteFile(deny, []byte("ALL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !a.Reload(log) {
		t.Fatal("peers.deny not loaded")
	}
	if want := " INFO fips::node::acl: Reloaded peer ACL files allow_file=" + allow + " deny_file=" + deny +
		" allow_entries=1 deny_entries=0 allow_all=false deny_all=true\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("no %q in:\n%s", want, buf.String())
	}

	// A directory where the file should be cannot be read.
	buf.Reset()
	bad := filepath.Join(dir, "dir.allow")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	(&ACL{AllowFile: bad}).Reload(log)
	if want := " WARN fips::node::acl: Failed to read ACL file path=" + bad + " error="; !strings.Contains(buf.String(), want) {
		t.Errorf("no %q in:\n%s", want, buf.String())
	}
}

// TestRejectedPeerByACLLogged: a peer the ACL refuses is upstream's WARN
// "Rejected peer by ACL" (fips::node::acl) with peer, npub, transport_id,
// remote_addr, context and decision — inbound_handshake for its msg1,
// outbound_connect for our dial.
func TestRejectedPeerByACLLogged(t *testing.T) {
	n := newSimNet(t, 10)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	acl := &ACL{}
	acl.deny, _ = ParseACL(strings.NewReader(a.id.Npub()+"\n"), nil, func(int, string, error) {})
	b.m.SetACL(acl)
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	if err := b.m.Dial(n.now.Add(time.Second), a.id.PublicKey(), b.candidate(a)); err == nil {
		t.Fatal("dial to a denied peer allowed")
	}
	for _, ctx := range []string{"inbound_handshake", "outbound_connect"} {
		found := false
		for _, l := range strings.Split(b.logs.String(), "\n") {
			if strings.Contains(l, `level=WARN msg="Rejected peer by ACL"`) && strings.Contains(l, ` log.target=fips::node::acl peer=`) &&
				strings.Contains(l, " npub="+a.id.Npub()+" transport_id=1 remote_addr=") &&
				strings.Contains(l, " context="+ctx+` decision="denylist match" rule=deny`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s rejection line:\n%s", ctx, b.logs)
		}
	}
}

// TestInitiationFailureLogged: a configured peer that cannot be dialled
// (here the ACL refuses it) is upstream's WARN "Failed to initiate peer
// connection" (fips::node::lifecycle; npub, alias in Rust's Option form,
// error) on the first attempt and "Retry connection initiation failed"
// (fips::node::peering::driver; peer, error) on the retries.
func TestInitiationFailureLogged(t *testing.T) {
	n := newSimNet(t, 11)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	acl := &ACL{}
	acl.deny, _ = ParseACL(strings.NewReader(b.id.Npub()+"\n"), nil, func(int, string, error) {})
	a.m.SetACL(acl)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Alias: "gw", Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	hasLine := func(parts ...string) bool {
		for _, l := range strings.Split(a.logs.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return true
			}
		}
		return false
	}
	if !hasLine(`level=WARN msg="Failed to initiate peer connection" `, ` log.target=fips::node::lifecycle npub=`+b.id.Npub()+` alias="Some(\"gw\")" error="peer denied by ACL (deny)"`) {
		t.Fatalf("no first-attempt line in:\n%s", a.logs)
	}
	if _, ok := waitSim(n, 10*time.Minute, func() bool {
		return hasLine(`level=WARN msg="Retry connection initiation failed" `, ` log.target=fips::node::peering::driver peer=`, ` error="peer denied by ACL (deny)"`)
	}); !ok {
		t.Fatalf("no retry line:\n%s", a.logs)
	}
	if c := strings.Count(a.logs.String(), `msg="Failed to initiate peer connection"`); c != 1 {
		t.Errorf("%d first-attempt lines, want 1", c)
	}
}
