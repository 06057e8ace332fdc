//go:build linux

package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPerms(t *testing.T) {
	var got []string
	for _, p := range Perms(3) {
		got = append(got, Join(p, ""))
	}
	want := []string{"ggg", "ggu", "gug", "guu", "ugg", "ugu", "uug", "uuu"}
	if !slices.Equal(got, want) {
		t.Fatalf("Perms(3) = %v, want %v", got, want)
	}
	if n := len(Perms(0)); n != 1 {
		t.Errorf("Perms(0) has %d sequences, want the empty one", n)
	}
	if s := Join([]Impl{G, U, G}, "-"); s != "g-u-g" {
		t.Errorf("Join = %q", s)
	}
}

func TestRandomMesh(t *testing.T) {
	for seed := range uint64(50) {
		for _, n := range []int{2, 3, 10, 17} {
			g := RandomMesh(n, n/2, seed)
			if !Connected(n, g.Edges) {
				t.Fatalf("seed %d n %d: not connected: %v", seed, n, g.Edges)
			}
			seen := map[[2]int]bool{}
			for _, e := range g.Edges {
				if e[0] >= e[1] || e[1] >= n || seen[e] {
					t.Fatalf("seed %d n %d: bad or repeated edge %v in %v", seed, n, e, g.Edges)
				}
				seen[e] = true
			}
			if want := n - 1 + min(n/2, n*(n-1)/2-(n-1)); len(g.Edges) != want {
				t.Errorf("seed %d n %d: %d edges, want %d", seed, n, len(g.Edges), want)
			}
			c := map[Impl]int{}
			for _, i := range g.Impls {
				c[i]++
			}
			if len(g.Impls) != n || 3*c[G] < n || 3*c[U] < n {
				t.Errorf("seed %d n %d: implementations %s", seed, n, g.Count())
			}
		}
	}
	a, b := RandomMesh(10, 5, 7), RandomMesh(10, 5, 7)
	if !slices.Equal(a.Edges, b.Edges) || !slices.Equal(a.Impls, b.Impls) {
		t.Error("the same seed drew two meshes")
	}
	if Connected(4, [][2]int{{0, 1}, {2, 3}}) {
		t.Error("two components reported connected")
	}
}

func TestRoundRobin(t *testing.T) {
	for n := 2; n <= 11; n++ {
		rounds := RoundRobin(n)
		pairs := map[[2]int]bool{}
		for r, round := range rounds {
			busy := map[int]bool{}
			for _, p := range round {
				if busy[p[0]] || busy[p[1]] {
					t.Fatalf("n %d round %d: a node twice in %v", n, r, round)
				}
				busy[p[0]], busy[p[1]] = true, true
				u := [2]int{min(p[0], p[1]), max(p[0], p[1])}
				if u[0] == u[1] || u[1] >= n || pairs[u] {
					t.Fatalf("n %d: bad or repeated pair %v", n, p)
				}
				pairs[u] = true
			}
		}
		if len(pairs) != n*(n-1)/2 {
			t.Errorf("n %d: %d pairs scheduled, want %d", n, len(pairs), n*(n-1)/2)
		}
		if want := n - 1 + n%2; len(rounds) != want {
			t.Errorf("n %d: %d rounds, want %d", n, len(rounds), want)
		}
	}
}

func TestTable(t *testing.T) {
	got := Table([]Row{
		{Scenario: "line A–B–C", Impls: "g-u-g", Result: Pass, Figure: "first ping 12 ms", Took: 4700 * time.Millisecond},
		{Scenario: "tcp link", Impls: "u dials g", Result: Fail, Figure: "curl: exit 7", Took: 12 * time.Second},
	})
	want := "" +
		"# | scenario   | impls     | result | figure           |   time\n" +
		"--|------------|-----------|--------|------------------|-------\n" +
		"1 | line A–B–C | g-u-g     | PASS   | first ping 12 ms |  4.7 s\n" +
		"2 | tcp link   | u dials g | FAIL   | curl: exit 7     | 12.0 s\n"
	if got != want {
		t.Errorf("Table:\n%s\nwant:\n%s", got, want)
	}
	if Ms(1234567*time.Microsecond) != "1234 ms" || Mbit(812.4e6) != "812 Mbit/s" || Seconds(61*time.Second) != "61.0 s" {
		t.Error("figure formats changed")
	}
}

func TestLongestStall(t *testing.T) {
	iv := 500 * time.Millisecond
	if d := LongestStall([]float64{9e6, 8e6, 0, 0, 1e3, 9e6, 0, 9e6}, iv); d != 1500*time.Millisecond {
		t.Errorf("stall %v, want 1.5 s (three intervals under 1%% of the median)", d)
	}
	if d := LongestStall([]float64{9e6, 8e6, 7e6}, iv); d != 0 {
		t.Errorf("stall %v in a steady run", d)
	}
	if d := LongestStall(nil, iv); d != 0 {
		t.Errorf("stall %v without intervals", d)
	}
}

// TestConfigPerImplementation: what the plan hands upstream nodes is only
// upstream's configuration; fips-go's dataplane section reaches fips-go
// nodes only.
func TestConfigPerImplementation(t *testing.T) {
	for _, m := range relayModes() {
		if ExtraFor(U, m.config()) != "" {
			t.Errorf("relay mode %s: an upstream node gets %q", m.name(), ExtraFor(U, m.config()))
		}
		if ExtraFor(G, m.config()) != m.config() {
			t.Errorf("relay mode %s: the fips-go node does not get its dataplane section", m.name())
		}
		if err := UpstreamKeysOnly(m.config()); err == nil || !strings.Contains(err.Error(), "dataplane") {
			t.Errorf("relay mode %s: UpstreamKeysOnly(%q) = %v, want dataplane refused", m.name(), m.config(), err)
		}
	}
	var names []string
	for _, m := range relayModes() {
		names = append(names, fmt.Sprintf("%s=%s/%v", m.name(), m.runs(), m.AFXDP))
	}
	if got := strings.Join(names, " "); got != "auto=/false userspace=userspace/false xdp=xdp/false afxdp=xdp/true afxdp-xsk=xdp/true" {
		t.Errorf("relay modes: %s", got)
	}
	for _, doc := range []string{"", "node:\n  rekey: { after_secs: 16 }\n", "tun: { enabled: true }\ndns: { enabled: true }\ntransports:\n  tcp: { bind_addr: \"0.0.0.0:2121\" }\npeers: []\n"} {
		if err := UpstreamKeysOnly(doc); err != nil {
			t.Errorf("UpstreamKeysOnly(%q): %v", doc, err)
		}
	}
	if err := UpstreamKeysOnly("metrics: { enabled: true }\n"); err == nil {
		t.Error("fips-go's metrics section passed as upstream's")
	}
}

// TestPlan: the rows issue 24 asks for, each with a distinct name.
func TestPlan(t *testing.T) {
	rows := plan(&env{seed: 1})
	names := map[string]bool{}
	count := map[string]int{}
	for _, r := range rows {
		key := r.scenario + " " + r.impls
		if names[key] {
			t.Errorf("row %q twice", key)
		}
		names[key] = true
		count[r.scenario]++
	}
	for scenario, want := range map[string]int{
		"line A–B–C": 8, "late joiner": 4, "random mesh": 1, "kill -9 restart": 2,
		"rekey under load": 2, "tcp link": 2, "relay auto": 1, "relay userspace": 1, "relay xdp": 1, "relay afxdp": 1,
	} {
		if count[scenario] != want {
			t.Errorf("%d rows of %s, want %d", count[scenario], scenario, want)
		}
	}
	if got := filterRows(rows, regexp.MustCompile(`^line.*u-g-u`)); len(got) != 1 || got[0].impls != "u-g-u" {
		t.Errorf("-run '^line.*u-g-u' picks %d rows", len(got))
	}
}

// The fips-go nodes' wire format goes to fips-go nodes only, and only
// when it is not master's; -format takes v0, v1 and auto.
func TestNodeFor(t *testing.T) {
	if NodeFor(U, "v1") != "" || NodeFor(G, "v0") != "" || NodeFor(G, "") != "" {
		t.Error("a wire_format for an upstream node or for v0")
	}
	if got := NodeFor(G, "v1"); got != "  wire_format: v1\n" {
		t.Errorf("fips-go v1: %q", got)
	}
	for _, f := range []string{"v0", "v1", "auto"} {
		if checkFormat(f) != nil {
			t.Errorf("%s refused", f)
		}
	}
	if checkFormat("next") == nil {
		t.Error("next accepted")
	}
}
