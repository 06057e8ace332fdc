//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/testing/daemons"
)

// tmuxScreen is fipstop running in a detached tmux session on a private
// tmux server, driven by send-keys and read by capture-pane.
type tmuxScreen struct {
	t      *testing.T
	socket string
}

func startTmux(t *testing.T, width, height int, args ...string) *tmuxScreen {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux not installed (apt-get install tmux): %v", err)
	}
	s := &tmuxScreen{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	cmd := append([]string{"-S", s.socket, "-f", "/dev/null", "new-session", "-d", "-s", "top",
		"-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-e", "TERM=xterm-256color"}, args...)
	if out, err := exec.Command("tmux", cmd...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	// Keep the pane (and what it printed) if fipstop exits, so a crash
	// shows in the failure instead of a vanished session.
	exec.Command("tmux", "-S", s.socket, "set-option", "-t", "top", "remain-on-exit", "on").Run()
	return s
}

func (s *tmuxScreen) capture() string {
	out, err := exec.Command("tmux", "-S", s.socket, "capture-pane", "-p", "-t", "top").CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return string(out)
}

func (s *tmuxScreen) keys(keys ...string) {
	s.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", s.socket, "send-keys", "-t", "top"}, keys...)...).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys %v: %v\n%s", keys, err, out)
	}
}

// exited reports whether fipstop has exited (its pane is dead).
func (s *tmuxScreen) exited() bool {
	out, err := exec.Command("tmux", "-S", s.socket, "list-panes", "-t", "top", "-F", "#{pane_dead}").CombinedOutput()
	return err == nil && strings.TrimSpace(string(out)) == "1"
}

// waitFor polls the screen until every want appears on it, failing with
// the last screen after timeout.
func (s *tmuxScreen) waitFor(what string, timeout time.Duration, want ...string) string {
	s.t.Helper()
	var screen string
	ok := func() bool {
		screen = s.capture()
		for _, w := range want {
			if !strings.Contains(screen, w) {
				return false
			}
		}
		return true
	}
	if _, done := daemons.WaitFor(timeout, ok); !done {
		s.t.Fatalf("%s: %q not all on screen after %v:\n%s", what, want, timeout, screen)
	}
	return screen
}

// tab presses Tab until name is the highlighted tab, then waits for want.
func (s *tmuxScreen) tab(name string, want ...string) string {
	s.t.Helper()
	current := func() string { return activeTab.FindString(firstLine(s.capture())) }
	for range int(numTabsOnBar) {
		was := current()
		if was == "["+name+"]" {
			break
		}
		s.keys("Tab")
		if _, ok := daemons.WaitFor(5*time.Second, func() bool { return current() != was }); !ok {
			s.t.Fatalf("Tab did not leave %s:\n%s", was, s.capture())
		}
	}
	screen := s.waitFor(name+" tab", 15*time.Second, append([]string{"[" + name + "]"}, want...)...)
	s.t.Logf("%s tab:\n%s", name, strings.TrimRight(screen, "\n "))
	return screen
}

// activeTab finds the highlighted tab on the tab bar.
var activeTab = regexp.MustCompile(`\[[A-Za-z]+\]`)

const numTabsOnBar = 11

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

type peerRow struct {
	Npub        string `json:"npub"`
	DisplayName string `json:"display_name"`
	NodeAddr    string `json:"node_addr"`
}

// TestFipstopTabsDisconnectAndRestart runs fipstop under tmux against node a
// of a mesh b—a—c (IPv6 on, a python3 listener on a's [::]:8088, a session
// from a to b): every tab shows a's own data, Del then y on a Peers row
// disconnects that peer (checked through a's control socket), and while a's
// daemon is stopped fipstop says Disconnected, then recovers by itself when
// the daemon is back.
func TestFipstopTabsDisconnectAndRestart(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab, ac := m.Link(a, b), m.Link(a, c)
	a.ExtraConfig = "dataplane: { mode: xdp }\n" // so the Dataplane tab has counters
	m.Start()
	m.WaitConverged(30 * time.Second)
	http := m.Spawn("a", "python3", "-m", "http.server", "--bind", "::", "8088")
	if !m.WaitListening("a", 8088, 10*time.Second) {
		t.Fatal("http.server not listening")
	}
	if out, err := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "5", b.IPv6()); err != nil {
		t.Fatalf("ping a→b: %v\n%s", err, out)
	}

	top := filepath.Join(m.Dir, "fipstop")
	root, err := daemons.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", top, "./cmd/fipstop")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fipstop: %v\n%s", err, out)
	}
	gw := filepath.Join(m.Dir, "no-gateway.sock")
	scr := startTmux(t, 200, 50, top, "-s", a.Socket, "--gateway-socket", gw, "-r", "1")

	var peers struct{ Peers []peerRow }
	if err := a.Call("show_peers", nil, &peers); err != nil || len(peers.Peers) != 2 {
		t.Fatalf("show_peers on a: %v %+v", err, peers)
	}
	name := map[string]string{}
	for _, p := range peers.Peers {
		name[p.Npub] = p.DisplayName
	}
	npubShown := func(n *Node) string { return n.Npub()[:19] } // the Peers column's truncation

	// Node: identity, state and the Listening-on-fips0 panel.
	scr.waitFor("Node tab", 15*time.Second, "[Node]", "Connected", a.Npub(), a.NodeAddr(), a.IPv6(),
		"Listening on fips0", fmt.Sprintf("python3(%d) *", http.Pid()), "8088", "fips-firewall.service inactive",
		"peers: 2")

	// Peers: both peers by display name and npub prefix.
	scr.tab("Peers", "Peers (2)", name[b.Npub()], name[c.Npub()], npubShown(b), npubShown(c), "10.77.0.2:2121", "10.77.1.2:2121")
	// Enter opens the first row's detail.
	scr.keys("Down")
	scr.waitFor("Peers row selected", 5*time.Second, "[Del] disconnect")
	scr.keys("Enter")
	detail := scr.waitFor("Peer detail", 5*time.Second, "Peer Detail", "Node Addr:", "Link Stats")
	if !strings.Contains(detail, b.NodeAddr()) && !strings.Contains(detail, c.NodeAddr()) {
		t.Errorf("peer detail shows neither peer's node address:\n%s", detail)
	}
	scr.keys("Escape")
	scr.waitFor("Peer detail closed", 5*time.Second, "Peers (2)")
	scr.keys("Escape")

	// Transports: the UDP transport; e expands its two links.
	scr.tab("Transports", "udp #", "0.0.0.0:2121")
	scr.keys("e")
	scr.waitFor("Transports expanded", 5*time.Second, "▾ udp #", "└ ", "10.77.0.2:2121", "10.77.1.2:2121", name[b.Npub()])

	// Sessions: the session a opened to b by pinging it.
	scr.tab("Sessions", "Sessions (1)", name[b.Npub()], "established")

	// Tree: a's root and both peers' declarations.
	var tree TreeView
	if err := a.Call("show_tree", nil, &tree); err != nil {
		t.Fatal(err)
	}
	scr.tab("Tree", "Tree Position", tree.Root, "Peer Declarations (2)", name[b.Npub()], name[c.Npub()])

	// Filters: a's own filter and both peers' filters.
	scr.tab("Filters", a.NodeAddr(), "Peer Filters (2)", name[b.Npub()], name[c.Npub()])

	// Performance: link MMP for both peers, session MMP for a→b.
	scr.tab("Performance", "Link MMP (2)", "Session MMP (1)", name[c.Npub()])

	// Routing: counters and the coordinate cache.
	scr.tab("Routing", "Coord Cache Entries:", "forwarding", "Coordinate Cache")

	// Graphs: the history, or a clear "no history" when the daemon has none.
	_, histErr := ctl.Call(t.Context(), a.Socket, "show_stats_all_history", map[string]string{"window": "10m", "granularity": "1s"})
	var se *ctl.ServerError
	if histErr != nil && errors.As(histErr, &se) && strings.HasPrefix(se.Message, "unknown command") {
		scr.tab("Graphs", "mode: node", "No stats history")
	} else if histErr == nil {
		scr.tab("Graphs", "mode: node", "mesh_size (", "peer_count (")
	} else {
		t.Fatalf("show_stats_all_history: %v", histErr)
	}

	// Gateway: nothing listens on the gateway socket.
	scr.tab("Gateway", "fips-gateway is not running", gw)

	// Dataplane: show_bpf's mode, reason, a's two veths and the counters.
	var bpf struct {
		Mode, Reason string
		Counters     []struct{ Verdict, Reason string }
	}
	if err := a.Call("show_bpf", nil, &bpf); err != nil || bpf.Mode != "xdp" || len(bpf.Counters) == 0 {
		t.Fatalf("show_bpf on a: %v %+v\n%s", err, bpf, a.Logs())
	}
	scr.tab("Dataplane", "Mode:                  xdp", bpf.Reason[:min(40, len(bpf.Reason))], "XDP Attachments (2)",
		ab.IfA, ac.IfA, "Verdict", bpf.Counters[0].Verdict+"  ", "XDP Maps", "links:")

	// ? shows the registry's keys for this tab; Esc closes it.
	scr.keys("?")
	scr.waitFor("help", 5*time.Second, "Help — Dataplane", "[Tab]", "next tab", "[q]", "[g]")
	scr.keys("Escape")
	scr.waitFor("help closed", 5*time.Second, "XDP Counters")

	// Del, then y: the selected peer is disconnected.
	scr.tab("Peers", "Peers (2)")
	scr.keys("Down")
	scr.waitFor("Peers row selected", 5*time.Second, "[Del] disconnect")
	scr.keys("DC")
	modal := scr.waitFor("confirm", 5*time.Second, "Disconnect peer?", "[Y] disconnect")
	victim := b
	if strings.Contains(modal, "Peer: "+name[c.Npub()]) {
		victim = c
	} else if !strings.Contains(modal, "Peer: "+name[b.Npub()]) {
		t.Fatalf("confirmation names neither peer:\n%s", modal)
	}
	scr.keys("y")
	gone := func() bool {
		var now struct{ Peers []peerRow }
		if err := a.Call("show_peers", nil, &now); err != nil {
			return false
		}
		for _, p := range now.Peers {
			if p.Npub == victim.Npub() {
				return false
			}
		}
		return true
	}
	if _, ok := daemons.WaitFor(5*time.Second, gone); !ok {
		t.Fatalf("%s still a peer of a after Del, y:\n%s", victim.Name, scr.capture())
	}
	scr.waitFor("disconnect notice", 5*time.Second, "disconnected "+name[victim.Npub()])

	// The daemon stops: fipstop stays up and says so; it comes back alone.
	scr.tab("Node", a.Npub())
	a.Stop(5 * time.Second)
	scr.waitFor("daemon stopped", 10*time.Second, "Disconnected: cannot connect to "+a.Socket, "retrying")
	a.Restart()
	screen := scr.waitFor("daemon restarted", 30*time.Second, "Connected", a.Npub())
	if uptime := regexp.MustCompile(`uptime: (\d+)s\b`).FindStringSubmatch(screen); uptime == nil {
		t.Errorf("after the restart the Node tab shows no fresh uptime:\n%s", screen)
	}
	scr.keys("q")
	if _, ok := daemons.WaitFor(5*time.Second, scr.exited); !ok {
		t.Fatalf("q did not quit fipstop:\n%s", scr.capture())
	}
}
