package node

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/session"
)

// TestSessionLayerCounters: the session bound's and the path signals'
// counters reach show_metrics' session family (and show_status'
// session_layer, the same object) under their documented keys.
func TestSessionLayerCounters(t *testing.T) {
	s := &Snapshot{SessStats: session.Stats{SessionsRefused: 1, SessionsEvicted: 2, MtuExceededOffPath: 3,
		PathBrokenOffPath: 4, MtuExceededContradicted: 5, ClampsExpired: 6}}
	b, err := json.Marshal(ctl.StatusData{SessionLayer: sessionLayer(s)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := json.Marshal(MetricsOf(s).Session)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{`"sessions_refused":1`, `"sessions_evicted":2`, `"mtu_exceeded_off_path":3`,
		`"path_broken_off_path":4`, `"mtu_exceeded_contradicted":5`, `"clamps_expired":6`} {
		if !strings.Contains(string(b), kv) || !strings.Contains(string(m), kv) {
			t.Errorf("%s missing from show_status session_layer or show_metrics session", kv)
		}
	}
	if !strings.Contains(string(b), `"session_layer":{`) {
		t.Error("no session_layer in show_status")
	}
}
