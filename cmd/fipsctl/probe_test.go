package main

import (
	"encoding/json"
	"strings"
	"testing"
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
