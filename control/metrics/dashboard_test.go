package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const dashboardPath = "../../docs/grafana/fips-dashboard.json"

type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// TestDashboardQueriesUseExportedNames: every query of every panel of the
// shipped Grafana dashboard (and its variables) names only metrics the
// endpoint exports, and parses as PromQL (promtool check rules).
func TestDashboardQueriesUseExportedNames(t *testing.T) {
	// The metric names a query can use from this endpoint.
	metricName := regexp.MustCompile(`\b(?:fips|go|process)_[A-Za-z0-9_]+\b`)
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	reg, _, _ := newTestRegistry(t, fullSnapshot(3), 8)
	exported := gather(t, reg)

	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if len(metricName.FindAllString(tg.Expr, -1)) == 0 {
				t.Errorf("panel %q: query %q names no metric of the endpoint", p.Title, tg.Expr)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				for _, name := range metricName.FindAllString(s, -1) {
					if exported[name] == nil {
						t.Errorf("variable %s uses %s, which the endpoint does not export", v.Name, name)
					}
				}
			}
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			used[name] = true
			if exported[name] == nil {
				t.Errorf("query %q uses %s, which the endpoint does not export", e, name)
			}
		}
	}
	if len(exprs) < 20 {
		t.Errorf("only %d queries", len(exprs))
	}

	// Each query, with the Grafana variable substituted, is valid PromQL.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		e = strings.ReplaceAll(e, "$instance", ".*")
		q, _ := json.Marshal(e)
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (apt-get install prometheus): %v", err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
	t.Logf("%d panels, %d queries over %d metric names; promtool check rules: %s", len(d.Panels), len(exprs), len(used),
		strings.Join(strings.Fields(string(out)), " "))
}
