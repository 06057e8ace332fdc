package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/ctl"
)

// TestPrintBPF: the human table names the mode, each interface with its
// attach mode and program, every counter and the map occupancy.
func TestPrintBPF(t *testing.T) {
	raw := `{"mode":"xdp","configured":"auto","reason":"dataplane.mode is auto: xdp_fips attached to veth0:native",
	"interfaces":[{"name":"veth0","ifindex":7,"attach_mode":"native","program_id":42}],"program_id":42,
	"counters":[{"verdict":"drop","reason":"unknown_index","packets":100000,"bytes":6400000},
	{"verdict":"pass","reason":"link_kernel","packets":12,"bytes":1500}],
	"maps":{"links":2,"links_max":65536,"links_refused":0,"ratelimit_entries":1,"ratelimit_max":16384,"local_addrs":3,"local_addrs_max":1024,"local_addrs_refused":0,"map_errors":0},
	"tc":{"attached":true,"reason":"tc_fips_egress and tc_fips_ingress attached to veth0:tcx",
	"interfaces":[{"name":"veth0","ifindex":7,"attach_mode":"tcx","egress_program_id":43,"ingress_program_id":44}]},
	"tc_counters":[{"direction":"egress","reason":"marked","packets":500,"bytes":70000},
	{"direction":"ingress","reason":"ce","packets":9,"bytes":900}],"outer_ce_frames":9,
	"afxdp":{"enabled":true,"sockets":1,"reason":"1 AF_XDP sockets (one per RX queue) receive established frames of known links"},
	"xsks":[{"interface":"veth0","ifindex":7,"queue":0,"slot":0,"rx_dropped":1,"rx_invalid_descs":0,"tx_invalid_descs":0,
	"rx_ring_full":2,"fill_ring_empty_descs":3,"tx_ring_empty_descs":0,"received":4096,"wakeups":5,"zero_copy":false,
	"need_wakeup":true,"frames":4096,"to_loop":12,"invalid":0,"other_port":0,"refused":0}]}`
	var s ctl.BPFView
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := printBPF(&b, &s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"dataplane: xdp (dataplane.mode auto)",
		"veth0      7        native  42",
		"drop     unknown_index  100000   6400000",
		"maps: links 2/65536 (refused 0), ratelimit 1/16384, local addresses 3/1024 (refused 0), map write errors 0",
		"ecn: tc_fips_egress and tc_fips_ingress attached to veth0:tcx",
		"veth0      7        tcx        43              44",
		"egress   marked  500      70000",
		"ingress  ce      9        900",
		"outer CE frames (handled as FMP CE): 9",
		"afxdp: 1 AF_XDP sockets",
		"veth0          0      0     copy  4096      12       1           2             3                0           0           5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// userspace: no tables, still says why.
	var u ctl.BPFView
	if err := json.Unmarshal([]byte(`{"mode":"userspace","configured":"userspace","reason":"dataplane.mode is userspace: no BPF loaded","interfaces":[],"program_id":0,"counters":[],"maps":null}`), &u); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := printBPF(&b, &u); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "dataplane: userspace (dataplane.mode userspace)\ndataplane.mode is userspace: no BPF loaded\nouter CE frames (handled as FMP CE): 0\n" {
		t.Errorf("userspace output %q", got)
	}
}

// TestBPFUsage: anything but `bpf stats [--json]` is a usage error.
func TestBPFUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"show"}, {"stats", "extra"}} {
		if err := runBPF(&env{}, args); err == nil {
			t.Errorf("%v accepted", args)
		} else if _, ok := err.(usageError); !ok {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
