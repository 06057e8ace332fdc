package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fips-go/fips/control/ctl"
)

func parseProbeReport(t *testing.T, s string) *probeReport {
	t.Helper()
	var r probeReport
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// Piped, each stage is printed once, when it settles, in order.
func TestProbeViewPiped(t *testing.T) {
	var b strings.Builder
	v := &probeView{w: &b}
	v.update(parseProbeReport(t, `{"target":{"display_name":"c"},"bloom":{"verdict":"ok","fanout":1,"elapsed_ms":0},
		"discovery":{"verdict":"running"},"path":{"verdict":"pending"},"session":{"verdict":"pending"},"rtt":{"verdict":"pending"}}`))
	v.update(parseProbeReport(t, `{"target":{"display_name":"c"},"bloom":{"verdict":"ok","fanout":1,"elapsed_ms":0},
		"discovery":{"verdict":"ok","source":"lookup","elapsed_ms":900},"path":{"verdict":"ok","elapsed_ms":0},
		"session":{"verdict":"running"},"rtt":{"verdict":"pending"}}`))
	done := parseProbeReport(t, `{"overall":"partial","target":{"display_name":"c"},"bloom":{"verdict":"ok","fanout":1,"elapsed_ms":0},
		"discovery":{"verdict":"ok","source":"lookup","elapsed_ms":900},"path":{"verdict":"ok","elapsed_ms":0},
		"session":{"verdict":"ok","elapsed_ms":5},"rtt":{"verdict":"failed","reason":"sub_millisecond","elapsed_ms":3000},
		"cleanup":{"session_created_and_torn_down":true}}`)
	v.finish(done)
	out := b.String()
	for _, st := range probeStages {
		if n := strings.Count(out, "\n  "+st+" "); n != 1 {
			t.Errorf("%d %q lines:\n%s", n, st, out)
		}
	}
	if !strings.Contains(out, "request sent to 1 peer") || !strings.Contains(out, "sub millisecond") ||
		!strings.Contains(out, "overall   partial") || strings.Contains(out, "\x1b[") {
		t.Errorf("output:\n%s", out)
	}
	if got := done.why(); got != "rtt failed: sub_millisecond" {
		t.Errorf("why %q", got)
	}
}

func TestProbeUsage(t *testing.T) {
	var out, errb strings.Builder
	if rc := run([]string{"probe"}, &env{stdout: &out, stderr: &errb}); rc != 2 || !strings.Contains(errb.String(), "Usage: fipsctl probe <TARGET>") {
		t.Errorf("rc %d stderr %q", rc, errb.String())
	}
}

// A --timeout or a daemon budget too large for a time.Duration means no
// client ceiling, not a negative one: 9223372037 s used to wrap around
// and give up after the first poll.
func TestProbeHugeTimeoutDoesNotWrap(t *testing.T) {
	for _, c := range []struct {
		budget string
		args   []string
	}{
		{"30000", []string{"--timeout", "9223372037"}},
		{"30000", []string{"--timeout", "18446744073709551615"}},
		{"18446744073709551615", nil},
	} {
		t.Run(c.budget+strings.Join(c.args, "_"), func(t *testing.T) {
			reg := ctl.NewRegistry()
			reg.Register("probe_start", func(context.Context, json.RawMessage) (any, error) {
				return json.RawMessage(`{"probe_id":1,"budget_ms":` + c.budget + `}`), nil
			})
			var polls atomic.Int64
			reg.Register("probe_poll", func(context.Context, json.RawMessage) (any, error) {
				state, overall := "running", "running"
				if polls.Add(1) >= 3 {
					state, overall = "done", "ok"
				}
				return json.RawMessage(`{"state":"` + state + `","report":{"overall":"` + overall + `","target":{"display_name":"t"}}}`), nil
			})
			reg.Register("probe_cancel", func(context.Context, json.RawMessage) (any, error) { return "cancelled", nil })
			path := serve(t, reg)
			args := append([]string{"-s", path, "probe", npubA, "--json"}, c.args...)
			code, _, errs := fipsctl(t, "", args...)
			if code != 0 || polls.Load() != 3 {
				t.Errorf("exit %d after %d polls: %s", code, polls.Load(), errs)
			}
		})
	}
}
