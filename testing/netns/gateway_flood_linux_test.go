package netns

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
)

// TestGatewayDNSFloodFromOneLANClient (issue 27, item 6): one LAN source
// address asks the gateway for 300 fresh <npub>.fips names, more than its
// share (gateway.dns.max_mappings_per_client, 256 by default). It holds
// no more than its share, the rest reclaimed from its own idle mappings
// and counted; another LAN client's query for a real node is still
// answered and its traffic reaches that node.
func TestGatewayDNSFloodFromOneLANClient(t *testing.T) {
	m, _, c, lanNS, _, g := gatewaySetup(t, 60, 60, "")
	lanCL := m.Prefix + "lanb"
	if out, err := ipCmd("-n", lanNS, "addr", "add", "fd02::66/64", "dev", lanCL, "nodad"); err != nil {
		t.Fatalf("flooder address: %v\n%s", err, out)
	}
	const flood, share = 300, 256
	var batch strings.Builder
	for range flood {
		id, err := identity.Generate(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		batch.WriteString(id.Npub() + ".fips AAAA\n")
	}
	file := filepath.Join(m.Dir, "flood.txt")
	if err := os.WriteFile(file, []byte(batch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustExec(t, lanNS, "dig", "@fd02::1", "-b", "fd02::66", "-f", file, "+short", "+time=3", "+tries=1")
	if n := strings.Count(out, "fd01::"); n != flood {
		t.Fatalf("%d of %d flood queries answered with a pool address", n, flood)
	}
	status := func() map[string]float64 {
		raw, err := ctl.Call(t.Context(), g.socket, "show_gateway", nil)
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		nums := map[string]float64{}
		for k, v := range s {
			if f, ok := v.(float64); ok {
				nums[k] = f
			}
		}
		return nums
	}
	st := status()
	if st["pool_evicted"] != flood-share || st["pool_allocated"] != share || st["nat_mappings"] != share || st["pool_refused"] != 0 {
		t.Fatalf("after the flood: %v, want %d evicted and %d held", st, flood-share, share)
	}

	// The legitimate client (fd02::2) still gets a mapping, and traffic.
	vip := strings.TrimSpace(mustExec(t, lanNS, "dig", "@fd02::1", "-b", "fd02::2", c.Npub()+".fips", "AAAA", "+short", "+time=3", "+tries=2"))
	if !strings.HasPrefix(vip, "fd01::") {
		t.Fatalf("legitimate query answered %q\n%s", vip, g.logs())
	}
	if out, err := m.execNS(lanNS, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", vip); err != nil || !strings.Contains(out, "3 received") {
		t.Fatalf("ping -6 %s from the LAN after the flood: %v\n%s\n%s", vip, err, out, g.logs())
	}
	if st := status(); st["nat_mappings"] != share+1 || st["pool_client_refused"] != 0 {
		t.Fatalf("after the legitimate query: %v", st)
	}
}
