//go:build unix

package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fips-go/fips/control/ctl"
)

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
