//go:build unix

package daemons

import (
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

type treeView struct {
	Root     string   `json:"root"`
	IsRoot   bool     `json:"is_root"`
	Depth    int      `json:"depth"`
	MyCoords []string `json:"my_coords"`
}

// minNodeAddr is the root a converged mesh of ids elects: the smallest
// NodeAddr.
func minNodeAddr(ids []*identity.Identity) string {
	minAddr := ""
	for _, id := range ids {
		if a := id.NodeAddr().String(); minAddr == "" || a < minAddr {
			minAddr = a
		}
	}
	return minAddr
}

// treeAgrees reports whether every daemon's show_tree names root and holds
// coordinates that start at its own address and are as long as its depth.
func treeAgrees(ds []*Daemon, ids []*identity.Identity, root string) bool {
	for i, d := range ds {
		var tv treeView
		if err := d.Call("show_tree", nil, &tv); err != nil || tv.Root != root || len(tv.MyCoords) != tv.Depth+1 ||
			tv.MyCoords[0] != ids[i].NodeAddr().String() {
			return false
		}
	}
	return true
}

// TestFiveDaemonsInALineAgreeOnTheRoot is issue 4's daemon acceptance:
// five fips processes in a line agree on the root (the smallest NodeAddr)
// in show_tree, and the tree re-forms when the middle one is killed and
// restarted.
func TestFiveDaemonsInALineAgreeOnTheRoot(t *testing.T) {
	const n = 5
	ds, ids := Line(t, bins, "n", n)
	minAddr := minNodeAddr(ids)
	agree := func() bool { return treeAgrees(ds, ids, minAddr) }
	took, ok := WaitFor(20*time.Second, agree)
	if !ok {
		t.Fatalf("the line did not agree on root %s\n%s", minAddr, ds[2].Logs())
	}
	t.Logf("5 daemons agree on root %s after %v", minAddr[:16], took.Round(time.Millisecond))

	// The routing views answer through fipsctl with upstream's shapes.
	mid := ds[2]
	for _, args := range [][]string{{"show", "tree"}, {"show", "bloom"}, {"show", "cache"}, {"show", "routing"},
		{"show", "identity-cache"}, {"stats", "metrics"}} {
		out, err := exec.Command(bins.Fipsctl, append([]string{"-s", mid.Socket}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("fipsctl %v: %v\n%s", args, err, out)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("fipsctl %v: not JSON: %v\n%s", args, err, out)
		}
		want := map[string][]string{
			"tree": {"root", "my_coords", "peers", "stats"}, "bloom": {"peer_filters", "stats"},
			"cache": {"count", "max_entries", "entries"}, "routing": {"forwarding", "lookup", "discovery", "pending_lookups"},
			"identity-cache": {"entries", "count", "max_entries"},
			"metrics":        {"forwarding", "lookup", "tree", "bloom", "congestion", "errors"},
		}[args[1]]
		for _, k := range want {
			if _, ok := v[k]; !ok {
				t.Errorf("fipsctl %v: no %q in %s", args, k, out)
			}
		}
		if args[1] == "metrics" {
			tr := v["tree"].(map[string]any)
			bl := v["bloom"].(map[string]any)
			if tr["accepted"].(float64) == 0 || bl["accepted"].(float64) == 0 {
				t.Errorf("no tree/bloom announces accepted: %s", out)
			}
		}
		if args[1] == "identity-cache" && v["count"].(float64) < 2 {
			t.Errorf("identity cache does not hold the two peers: %s", out)
		}
	}

	ds[2].Kill()
	ds[2].Start()
	took, ok = WaitFor(20*time.Second, agree)
	if !ok {
		t.Fatalf("tree did not re-form after the middle node restarted\n%s", ds[2].Logs())
	}
	t.Logf("re-formed %v after the middle node's restart", took.Round(time.Millisecond))
}
