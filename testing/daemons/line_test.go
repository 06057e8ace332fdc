//go:build unix

package daemons

import (
	"fmt"
	"strings"
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

// TestFiveDaemonsInALineAgreeOnTheRoot is issue 4's daemon acceptance:
// five fips processes in a line agree on the root (the smallest NodeAddr)
// in show_tree, and the tree re-forms when the middle one is killed and
// restarted.
func TestFiveDaemonsInALineAgreeOnTheRoot(t *testing.T) {
	const n = 5
	ids := make([]*identity.Identity, n)
	ports := make([]int, n)
	minAddr := ""
	for i := range ids {
		id, err := identity.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i], ports[i] = id, FreePort(t)
		if a := id.NodeAddr().String(); minAddr == "" || a < minAddr {
			minAddr = a
		}
	}
	ds := make([]*Daemon, n)
	for i := range ds {
		var peers strings.Builder
		for _, j := range []int{i - 1, i + 1} {
			if j < 0 || j >= n {
				continue
			}
			fmt.Fprintf(&peers, "  - npub: %q\n    addresses:\n      - { transport: udp, addr: \"127.0.0.1:%d\" }\n", ids[j].Npub(), ports[j])
		}
		cfg := fmt.Sprintf("node:\n  identity: { nsec: %q }\n  control: { socket_path: \"{{DIR}}/control.sock\" }\n"+
			"transports:\n  udp: { bind_addr: \"127.0.0.1:%d\" }\npeers:\n%s", ids[i].Secret().Hex(), ports[i], peers.String())
		ds[i] = New(t, bins, fmt.Sprintf("n%d", i), cfg)
		ds[i].Start()
	}
	agree := func() bool {
		for i, d := range ds {
			var tv treeView
			if err := d.Call("show_tree", nil, &tv); err != nil || tv.Root != minAddr || len(tv.MyCoords) != tv.Depth+1 ||
				tv.MyCoords[0] != ids[i].NodeAddr().String() {
				return false
			}
		}
		return true
	}
	took, ok := WaitFor(20*time.Second, agree)
	if !ok {
		t.Fatalf("the line did not agree on root %s\n%s", minAddr, ds[2].Logs())
	}
	t.Logf("5 daemons agree on root %s after %v", minAddr[:16], took.Round(time.Millisecond))

	ds[2].Kill()
	ds[2].Start()
	took, ok = WaitFor(20*time.Second, agree)
	if !ok {
		t.Fatalf("tree did not re-form after the middle node restarted\n%s", ds[2].Logs())
	}
	t.Logf("re-formed %v after the middle node's restart", took.Round(time.Millisecond))
}
