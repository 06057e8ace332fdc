package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseFeaturesAndWireOffload(t *testing.T) {
	out := `Features for fgo1-l0a:
rx-checksumming: on
tcp-segmentation-offload: on
	tx-tcp-segmentation: on
	tx-tcp6-segmentation: off [requested on]
generic-segmentation-offload: on
generic-receive-offload: off
large-receive-offload: off [fixed]
tx-udp-segmentation: on
tx-gso-list: on
rx-gro-hw: off [fixed]
rx-udp-gro-forwarding: off
tx-esp-segmentation: off [fixed]
highdma: on
`
	fs := ParseFeatures(out)
	if len(fs) != 13 || !fs["tx-tcp-segmentation"].On || fs["tx-tcp6-segmentation"].On || !fs["large-receive-offload"].Fixed {
		t.Fatalf("ParseFeatures = %v", fs)
	}
	want := []string{"generic-segmentation-offload", "tx-gso-list", "tx-tcp-segmentation", "tx-udp-segmentation"}
	if got := WireOffloadsOn(fs); !slices.Equal(got, want) {
		t.Errorf("WireOffloadsOn = %v, want %v", got, want)
	}
	for _, name := range []string{"rx-checksumming", "highdma", "tcp-segmentation-offload", "tx-checksum-ip-generic"} {
		if WireOffload(name) {
			t.Errorf("WireOffload(%q)", name)
		}
	}
}

func TestParseUnderlays(t *testing.T) {
	if u, err := ParseUnderlays("wire, default,wire"); err != nil || !slices.Equal(u, []Underlay{UnderlayWire, UnderlayDefault}) {
		t.Errorf("ParseUnderlays = %v, %v", u, err)
	}
	if _, err := ParseUnderlays("fast"); err == nil {
		t.Error("unknown underlay accepted")
	}
}

// TestMarkdownShowsTheWireUnderlay: the wire underlay's results are
// tables of their own after the default's, the history gains its transit
// ratio, and the default results keep their JSON shape (no underlay key).
func TestMarkdownShowsTheWireUnderlay(t *testing.T) {
	run := sampleRun("2026-12-01T00:00:00Z", 500)
	for _, p := range sampleRun("", 900).Paths {
		p.Underlay = UnderlayWire
		run.Paths = append(run.Paths, p)
	}
	run.Underlays = []Underlay{UnderlayDefault, UnderlayWire}
	md := Markdown(run, []Run{sampleRun("2026-11-30T00:00:00Z", 400)})
	d, w := strings.Index(md, "### transit (3 nodes)\n"), strings.Index(md, "### transit (3 nodes), wire-like underlay\n")
	if d < 0 || w < d {
		t.Fatalf("underlay sections missing or out of order:\n%s", md)
	}
	for _, want := range []string{
		"| TCP, 1 stream | Mbit/s | 20,000 | 1,000 [900–1,100] | 500 [490–510] | 0.50× |",
		"| TCP, 1 stream | Mbit/s | 20,000 | 1,000 [900–1,100] | 900 [890–910] | 0.90× |",
		"- Underlays: **default**",
		"| transit ping p99 under load | wire transit TCP 1 |",
		"| 2026-12-01T00:00:00Z | `abc123` | full | fips-go | — | 0.50× | — | — | 0.50× | — | 0.90× |",
		"| 2026-11-30T00:00:00Z | `abc123` | full | fips-go | — | 0.40× | — | — | 0.50× | — | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if got := run.Path(TopoTransit, SystemFips).Metrics["tcp1_mbps"].Median; got != 500 {
		t.Errorf("Path picks the wire result: %v", got)
	}
	b, err := json.Marshal(run.Paths[0])
	if err != nil || strings.Contains(string(b), "underlay") {
		t.Errorf("default path JSON %s %v", b, err)
	}
	if b, _ := json.Marshal(run.Paths[len(run.Paths)-1]); !strings.Contains(string(b), `"underlay":"wire"`) {
		t.Errorf("wire path JSON %s", b)
	}
	if md := Markdown(sampleRun("x", 1), nil); strings.Contains(md, "wire-like") || strings.Contains(md, "Underlays") {
		t.Errorf("a default-only run mentions the wire underlay:\n%s", md)
	}
}
