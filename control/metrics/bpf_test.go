package metrics

import (
	"testing"

	"github.com/fips-go/fips/control/ctl"
)

// bpfSource is a fakeSource whose node runs the XDP program.
type bpfSource struct {
	fakeSource
	v ctl.BPFView
}

func (b *bpfSource) BPF() (ctl.BPFView, error) { return b.v, nil }

// TestXDPMetrics: in xdp mode a scrape reads the program's counters per
// verdict and reason, its attachments and map occupancy; in userspace only
// the mode is exported.
func TestXDPMetrics(t *testing.T) {
	s := fullSnapshot(1)
	s.Dataplane = ctl.DataplaneView{Mode: ctl.DataplaneXDP, Configured: ctl.DataplaneAuto,
		Interfaces: []ctl.XDPInterface{{Name: "veth0", Ifindex: 3, AttachMode: "native", ProgramID: 77}}}
	src := &bpfSource{v: ctl.BPFView{DataplaneView: s.Dataplane, ProgramID: 77,
		Counters: []ctl.XDPCounter{{Verdict: "drop", Reason: "unknown_index", Packets: 100_000, Bytes: 6_400_000},
			{Verdict: "drop", Reason: "rate_limited", Packets: 900, Bytes: 100_000},
			{Verdict: "pass", Reason: "not_local", Packets: 77, Bytes: 7_700}},
		Maps: &ctl.XDPMaps{Links: 2, LinksMax: 65536, LinksRefused: 1, Ratelimit: 3, RatelimitMax: 16384,
			LocalAddrs: 5, LocalAddrsMax: 1024, LocalAddrsRefused: 2, MapErrors: 1},
		TCCounters: []ctl.TCCounter{{Direction: "egress", Reason: "marked", Packets: 500, Bytes: 70_000}, {Direction: "ingress", Reason: "ce", Packets: 9, Bytes: 900},
			{Direction: "egress", Reason: "forwarded", Packets: 66, Bytes: 6_600}}}}
	src.v.TC = ctl.TCView{Attached: true, Interfaces: []ctl.TCInterface{{Name: "veth0", Ifindex: 3, AttachMode: "tcx"}}}
	s.Dataplane.OuterCE = 9
	src.v.XSKs = []ctl.XSKView{{Interface: "veth0", Queue: 0, XSKStatistics: ctl.XSKStatistics{Received: 4096, RxRingFull: 2, Transmitted: 4000}, ToLoop: 12}}
	src.v.XSKTx = ctl.XSKTxView{Enabled: true, Frames: 4001, FallbackNoRoute: 3, FallbackNoFrame: 5}
	src.s.Store(s)
	reg, _, err := NewRegistry(src, Options{Info: Info{Version: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"fips_dataplane_mode", map[string]string{"mode": "xdp"}, 1},
		{"fips_xdp_interface_info", map[string]string{"interface": "veth0", "attach_mode": "native", "program_id": "77"}, 1},
		{"fips_xdp_packets_total", map[string]string{"verdict": "drop", "reason": "unknown_index"}, 100_000},
		{"fips_xdp_bytes_total", map[string]string{"verdict": "drop", "reason": "unknown_index"}, 6_400_000},
		{"fips_xdp_packets_total", map[string]string{"verdict": "drop", "reason": "rate_limited"}, 900},
		{"fips_xdp_map_entries", map[string]string{"map": "links"}, 2},
		{"fips_xdp_map_entries", map[string]string{"map": "ratelimit"}, 3},
		{"fips_xdp_map_max_entries", map[string]string{"map": "links"}, 65536},
		{"fips_xdp_links_refused_total", nil, 1},
		{"fips_xdp_packets_total", map[string]string{"verdict": "pass", "reason": "not_local"}, 77},
		{"fips_xdp_map_entries", map[string]string{"map": "local_addrs"}, 5},
		{"fips_xdp_map_max_entries", map[string]string{"map": "local_addrs"}, 1024},
		{"fips_xdp_local_addrs_refused_total", nil, 2},
		{"fips_tc_packets_total", map[string]string{"direction": "egress", "reason": "forwarded"}, 66},
		{"fips_xdp_map_errors_total", nil, 1},
		{"fips_tc_interface_info", map[string]string{"interface": "veth0", "attach_mode": "tcx"}, 1},
		{"fips_tc_packets_total", map[string]string{"direction": "egress", "reason": "marked"}, 500},
		{"fips_tc_bytes_total", map[string]string{"direction": "ingress", "reason": "ce"}, 900},
		{"fips_outer_ce_frames_total", nil, 9},
		{"fips_afxdp_frames_total", map[string]string{"interface": "veth0", "queue": "0"}, 4096},
		{"fips_afxdp_to_loop_total", map[string]string{"interface": "veth0", "queue": "0"}, 12},
		{"fips_afxdp_ring_events_total", map[string]string{"interface": "veth0", "queue": "0", "kind": "rx_ring_full"}, 2},
		{"fips_afxdp_tx_frames_total", map[string]string{"interface": "veth0", "queue": "0"}, 4000},
		{"fips_afxdp_tx_fallback_total", map[string]string{"reason": "no_route"}, 3},
		{"fips_afxdp_tx_fallback_total", map[string]string{"reason": "no_frame"}, 5},
		{"fips_afxdp_tx_fallback_total", map[string]string{"reason": "too_big"}, 0},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	u := fullSnapshot(1)
	u.Dataplane = ctl.DataplaneView{Mode: ctl.DataplaneUserspace, Configured: ctl.DataplaneUserspace}
	src.s.Store(u)
	fams = gather(t, reg)
	if got := value(t, fams, "fips_dataplane_mode", map[string]string{"mode": "userspace"}); got != 1 {
		t.Errorf("userspace mode gauge %v", got)
	}
	if _, ok := fams["fips_xdp_packets_total"]; ok {
		t.Error("XDP counters exported in userspace mode")
	}
}
