package metrics

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// docsPath is docs/metrics.md, from this package's directory.
const docsPath = "../../docs/metrics.md"

const (
	docsBegin = "<!-- BEGIN GENERATED: go test ./control/metrics with FIPS_UPDATE_DOCS=1 -->\n"
	docsEnd   = "<!-- END GENERATED -->\n"
)

// renderTables is the generated part of docs/metrics.md: every metric
// the endpoint exports, fips-go's from the collector's definitions, the
// Go runtime and process collectors' from a scrape.
func renderTables(t *testing.T) string {
	t.Helper()
	reg, c, _ := newTestRegistry(t, fullSnapshot(3), 8)
	fams := gather(t, reg)
	var b strings.Builder
	b.WriteString(docsBegin)
	b.WriteString("\n### FIPS metrics\n\n| Metric | Type | Unit | Labels | Meaning | Mirrors |\n|---|---|---|---|---|---|\n")
	for _, d := range c.Defs() {
		labels := "—"
		if len(d.Labels) > 0 {
			labels = "`" + strings.Join(d.Labels, "`, `") + "`"
		}
		unit := d.Unit
		if unit == "" {
			unit = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", d.Name, d.Type, unit, labels,
			strings.ReplaceAll(d.Help, "|", "\\|"), d.Source)
	}
	b.WriteString("\n### Go runtime and process (client_golang collectors)\n\n| Metric | Type | Meaning |\n|---|---|---|\n")
	var names []string
	for n := range fams {
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", n, strings.ToLower(fams[n].GetType().String()),
			strings.ReplaceAll(fams[n].GetHelp(), "|", "\\|"))
	}
	b.WriteString("\n" + docsEnd)
	return b.String()
}

// TestDocsListEveryMetric: docs/metrics.md's tables are exactly what the
// endpoint exports (regenerate with FIPS_UPDATE_DOCS=1).
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(docsBegin)), bytes.Index(doc, []byte(docsEnd))
	if i < 0 || j < i {
		t.Fatalf("%s has no generated section", docsPath)
	}
	want := renderTables(t)
	got := string(doc[i : j+len(docsEnd)])
	if got == want {
		return
	}
	if os.Getenv("FIPS_UPDATE_DOCS") == "1" {
		out := string(doc[:i]) + want + string(doc[j+len(docsEnd):])
		if err := os.WriteFile(docsPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", docsPath)
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(gl) || k < len(wl); k++ {
		var g, w string
		if k < len(gl) {
			g = gl[k]
		}
		if k < len(wl) {
			w = wl[k]
		}
		if g != w {
			t.Fatalf("%s is out of date (run go test ./control/metrics with FIPS_UPDATE_DOCS=1); first difference at line %d of the section:\n doc:  %s\n want: %s", docsPath, k+1, g, w)
		}
	}
}
