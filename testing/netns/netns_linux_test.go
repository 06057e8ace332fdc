//go:build linux

package netns

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type probeReport struct {
	Overall string     `json:"overall"`
	Bloom   probeStage `json:"bloom"`
	Disc    probeStage `json:"discovery"`
	Path    probeStage `json:"path"`
	Session probeStage `json:"session"`
	RTT     probeStage `json:"rtt"`
}

type probeStage struct {
	Verdict string  `json:"verdict"`
	Reason  *string `json:"reason"`
}

func (s probeStage) reason() string {
	if s.Reason == nil {
		return ""
	}
	return *s.Reason
}

// TestChainInNamespaces runs three daemons in three namespaces, A—B—C over
// veth pairs with no A—C link: they agree on the root, A probes C through
// B with fipsctl, and afterwards nothing with the run's prefix is left.
func TestChainInNamespaces(t *testing.T) {
	// Registered before New, so it runs after the mesh's Close: cleanups
	// run last-registered first.
	var prefix string
	t.Cleanup(func() {
		if prefix == "" {
			return
		}
		nss, err := Namespaces(prefix)
		if err != nil {
			t.Error(err)
		}
		links, err := RootLinks(prefix)
		if err != nil {
			t.Error(err)
		}
		pids, err := Pids(prefix)
		if err != nil {
			t.Error(err)
		}
		if len(nss)+len(links)+len(pids) > 0 {
			t.Errorf("left behind with prefix %s: namespaces %v, links %v, pids %v", prefix, nss, links, pids)
		} else {
			t.Logf("nothing with prefix %s remains (ip netns list, ip link)", prefix)
		}
	})
	m := New(t, Options{})
	prefix = m.Prefix
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	m.Start()
	took := m.WaitConverged(30 * time.Second)
	tv, _ := a.Tree()
	t.Logf("converged in %v on root %s", took.Round(time.Millisecond), tv.Root)

	// The namespaces really are separate: A has only its end of link 0.
	if out, err := m.Exec("a", "ip", "-o", "-4", "addr", "show"); err != nil {
		t.Fatalf("exec in a: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "10.77.0.1/30") || strings.Contains(string(out), "10.77.1.") {
		t.Fatalf("ip addr in a:\n%s", out)
	}

	out, err := m.Fipsctl("a", "probe", c.Npub(), "--json")
	var rep probeReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("fipsctl probe: %v / %v\n%s\n%s", err, jerr, out, a.Logs())
	}
	stages := map[string]probeStage{"bloom": rep.Bloom, "discovery": rep.Disc, "path": rep.Path, "session": rep.Session, "rtt": rep.RTT}
	t.Logf("probe a -> c: overall %s (exit %v); bloom %s, discovery %s, path %s, session %s, rtt %s",
		rep.Overall, err, rep.Bloom.Verdict, rep.Disc.Verdict, rep.Path.Verdict, rep.Session.Verdict, rep.RTT.Verdict)
	if err != nil || rep.Overall != "ok" {
		t.Fatalf("probe: exit %v, overall %q", err, rep.Overall)
	}
	for name, s := range stages {
		if s.Verdict != "ok" {
			t.Errorf("stage %s: %s %s", name, s.Verdict, s.reason())
		}
	}
}
