// Package metrics exports a node's state in the Prometheus text format
// (fips-go addition: upstream has no metrics endpoint). A Collector reads
// the node's published snapshot at scrape time, the same data the
// read-only show_* control commands answer from, so a scrape never waits
// on the event loop.
package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/transport"
)

// Source is what the collector reads: the node's published snapshot
// (*node.Node satisfies it). Snapshot may return nil before the first
// publication.
type Source interface {
	Snapshot() *node.Snapshot
}

// BPFSource is optional on a Source: the XDP program's counters and maps,
// read from the kernel at scrape time (*node.Node satisfies it).
type BPFSource interface {
	BPF() (ctl.BPFView, error)
}

// Info identifies the node in fips_node_info.
type Info struct {
	Version  string
	Npub     string
	NodeAddr string
}

// Options configure a Collector.
type Options struct {
	// MaxPeerLabels caps the peers with their own series (metrics.max_peer_labels);
	// the rest are summed under peer="_other". Negative means 0.
	MaxPeerLabels int
	Info          Info
}

// OtherPeer is the peer label value of the series that sum the peers
// beyond the label cap.
const OtherPeer = "_other"

// Def describes one exported metric family (docs/metrics.md is rendered
// from these).
type Def struct {
	Name   string
	Type   string // counter or gauge
	Unit   string
	Labels []string
	Help   string
	Source string // the control command and JSON field it mirrors
}

// flatFamily is a group of counters read from one flat JSON object.
type flatFamily struct {
	keys  []string
	descs map[string]*prometheus.Desc
	gauge map[string]bool
}

// Collector is a prometheus.Collector over a node's snapshot. It is safe
// for concurrent scrapes.
type Collector struct {
	src  Source
	max  int
	info Info
	defs []Def

	metricsFams map[string]*flatFamily // show_metrics family -> members
	famOrder    []string
	link        *flatFamily
	routing     *flatFamily
	transport   *flatFamily
	d           map[string]*prometheus.Desc

	mu       sync.Mutex
	labelled map[string]bool // node_addr -> has its own series
	refused  uint64          // peer samples folded into _other, over all scrapes
}

// Labels of the per-transport series.
func transportLabels() []string { return []string{"transport_id", "type", "name"} }

// transportRename gives show_transports counters unit-suffixed names.
func transportRename() map[string]string {
	return map[string]string{"packets_sent": "sent_packets", "packets_recv": "received_packets",
		"bytes_sent": "sent_bytes", "bytes_recv": "received_bytes"}
}

// metricsRename renames the show_metrics members whose names break the
// Prometheus conventions, by family: "is_us" reads as microseconds.
func metricsRename() map[string]map[string]string {
	return map[string]map[string]string{"lookup": {"req_target_is_us": "req_target_is_self"}}
}

// NewCollector builds the collector; it fails if a counter of a show_*
// object has no help text (a programming error caught by the tests).
func NewCollector(src Source, o Options) (*Collector, error) {
	c := &Collector{src: src, max: max(0, o.MaxPeerLabels), info: o.Info, metricsFams: map[string]*flatFamily{},
		d: map[string]*prometheus.Desc{}, labelled: map[string]bool{}}
	help := counterHelp()
	used := map[string]bool{}

	// show_metrics: every family but the legacy alias "discovery".
	fams, err := flatten(ctl.MetricsJSON{})
	if err != nil {
		return nil, err
	}
	for _, fam := range sortedKeys(fams) {
		if fam == "discovery" {
			continue
		}
		members, ok := fams[fam].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("metrics: show_metrics.%s is not an object", fam)
		}
		f, err := c.flatFamily(fam, "fips_"+fam+"_", members, nil, metricsRename()[fam], help, used, "show_metrics "+fam)
		if err != nil {
			return nil, err
		}
		c.metricsFams[fam] = f
		c.famOrder = append(c.famOrder, fam)
	}
	for _, g := range []struct {
		fam, prefix, src string
		v                any
		dst              **flatFamily
		labels           []string
		rename           map[string]string
	}{
		{"link", "fips_link_", "show_status link_layer", peer.Stats{}, &c.link, nil, nil},
		{"routing", "fips_routing_limits_", "show_routing limits", route.LimitStats{}, &c.routing, nil, nil},
		// The Ethernet counters are omitted from JSON when 0 (other
		// transports have none): set here so the family has their keys.
		{"transport", "fips_transport_", "show_transports stats", transport.Stats{BeaconsSent: 1, BeaconsRecv: 1, BeaconsKeyless: 1, NeighboursRefused: 1},
			&c.transport, transportLabels(), transportRename()},
	} {
		m, err := flatten(g.v)
		if err != nil {
			return nil, err
		}
		f, err := c.flatFamily(g.fam, g.prefix, m, g.labels, g.rename, help, used, g.src)
		if err != nil {
			return nil, err
		}
		*g.dst = f
	}
	for k := range help {
		if !used[k] {
			return nil, fmt.Errorf("metrics: help text for %s, which no show_* object has", k)
		}
	}

	peerL := []string{"peer"}
	for _, g := range []struct {
		name, typ, unit, help, src string
		labels                     []string
	}{
		{"fips_node_info", "gauge", "", "Always 1; labels identify the node and its software version.", "show_status version, npub, node_addr", []string{"version", "npub", "node_addr"}},
		{"fips_node_state", "gauge", "", "1 for the node's current lifecycle state (created, starting, running, degraded, draining, stopping, stopped).", "show_status state", []string{"state"}},
		{"fips_node_start_time_seconds", "gauge", "seconds", "When the node started, in seconds since the Unix epoch.", "show_status uptime_secs", nil},
		{"fips_peers", "gauge", "peers", "Active (authenticated) peers.", "show_status peer_count", nil},
		{"fips_peers_post_quantum", "gauge", "peers", "Active peers whose link's current keys come from an ML-KEM-768 upgrade (node.link.pq).", "show_peers post_quantum", nil},
		{"fips_connections", "gauge", "connections", "Link handshakes in progress.", "show_status connection_count", nil},
		{"fips_sessions", "gauge", "sessions", "End-to-end sessions in the session table.", "show_status session_count", nil},
		{"fips_sessions_post_quantum", "gauge", "sessions", "Established sessions whose current keys come from an ML-KEM-768 upgrade (node.session.pq).", "show_sessions post_quantum", nil},
		{"fips_tree_depth", "gauge", "hops", "This node's depth in the spanning tree (0 at the root).", "show_tree depth", nil},
		{"fips_tree_is_root", "gauge", "", "1 when this node is the root of its spanning tree.", "show_tree is_root", nil},
		{"fips_tree_peers", "gauge", "peers", "Peers with an accepted tree declaration.", "show_tree peer_tree_count", nil},
		{"fips_mesh_estimated_nodes", "gauge", "nodes", "Estimated number of nodes in the mesh (absent until an estimate exists).", "show_status estimated_mesh_size", nil},
		{"fips_coord_cache_entries", "gauge", "entries", "Entries in the coordinate cache (expired ones not yet purged included).", "show_routing coord_cache_entries", nil},
		{"fips_identity_cache_entries", "gauge", "entries", "Keys in the identity cache.", "show_identity_cache count", nil},
		{"fips_identity_cache_max_entries", "gauge", "entries", "Capacity of the identity cache (node.cache.identity_size).", "show_identity_cache max_entries", nil},
		{"fips_pending_lookups", "gauge", "lookups", "Lookups in flight.", "show_routing pending_lookups", nil},
		{"fips_receive_queue_drops_total", "counter", "packets", "Received packets refused because the event loop had stopped (a full receive queue holds the reader back instead).", "show_status receive_queue_drops", nil},
		{"fips_receive_queue_aqm_drops_total", "counter", "packets", "Established frames dropped by CoDel on the receive path (a standing queue above 5 ms for 100 ms).", "show_status receive_queue_aqm_drops", nil},
		{"fips_link_messages_received_total", "counter", "messages", "Authenticated link messages received, by message type.", "node link-message dispatch", []string{"type"}},
		{"fips_link_messages_rejected_total", "counter", "messages", "Link messages refused, by reason (tree_*, bloom_* or the message type).", "node link-message dispatch", []string{"reason"}},
		{"fips_tun_up", "gauge", "", "1 when the IPv6 adapter's TUN device is active.", "show_status tun_state", []string{"tun_name"}},
		{"fips_transport_up", "gauge", "", "1 when the transport is up.", "show_transports state", transportLabels()},
		{"fips_transport_mtu_bytes", "gauge", "bytes", "The transport's MTU.", "show_transports mtu", transportLabels()},
		{"fips_peer_info", "gauge", "", "Always 1 for a labelled peer; labels name it and its link.", "show_peers display_name, npub, transport_type, direction", []string{"peer", "name", "npub", "transport_type", "direction"}},
		{"fips_peer_sent_bytes_total", "counter", "bytes", "Bytes sent to the peer over its link since it came up (peer=\"_other\": sum over unlabelled peers).", "show_peers stats.bytes_sent", peerL},
		{"fips_peer_received_bytes_total", "counter", "bytes", "Bytes received from the peer over its link since it came up (peer=\"_other\": sum over unlabelled peers).", "show_peers stats.bytes_recv", peerL},
		{"fips_peer_sent_packets_total", "counter", "packets", "Packets sent to the peer since its link came up (peer=\"_other\": sum over unlabelled peers).", "show_peers stats.packets_sent", peerL},
		{"fips_peer_received_packets_total", "counter", "packets", "Packets received from the peer since its link came up (peer=\"_other\": sum over unlabelled peers).", "show_peers stats.packets_recv", peerL},
		{"fips_peer_goodput_bytes_per_second", "gauge", "bytes per second", "Smoothed forward goodput of the link (peer=\"_other\": sum over unlabelled peers).", "show_mmp peers[].goodput_bps", peerL},
		{"fips_peer_srtt_seconds", "gauge", "seconds", "Smoothed round-trip time of the link (absent until measured).", "show_mmp peers[].srtt_ms", peerL},
		{"fips_peer_loss_ratio", "gauge", "ratio", "Link loss rate, 0 to 1.", "show_mmp peers[].loss_rate", peerL},
		{"fips_peer_jitter_seconds", "gauge", "seconds", "Interarrival jitter measured on the peer's frames.", "show_mmp peers[].jitter_us", peerL},
		{"fips_peer_etx", "gauge", "transmissions", "Expected transmission count of the link (1 = lossless).", "show_mmp peers[].etx", peerL},
		{"fips_peer_delivery_forward_ratio", "gauge", "ratio", "Fraction of our frames the peer reports delivered.", "show_mmp peers[].delivery_ratio_forward", peerL},
		{"fips_peer_delivery_reverse_ratio", "gauge", "ratio", "Fraction of the peer's frames we received.", "show_mmp peers[].delivery_ratio_reverse", peerL},
		{"fips_peer_connected_seconds", "gauge", "seconds", "Time since the peer authenticated.", "show_peers authenticated_at_ms", peerL},
		{"fips_peer_tree_depth", "gauge", "hops", "The peer's depth in the spanning tree (absent without a tree position).", "show_peers tree_depth", peerL},
		{"fips_peer_tree_parent", "gauge", "", "1 when the peer is this node's tree parent.", "show_peers is_parent", peerL},
		{"fips_dataplane_mode", "gauge", "", "1 for the dataplane that runs (xdp or userspace; dataplane.mode auto falls back to userspace when XDP cannot attach).", "show_status dataplane.mode", []string{"mode"}},
		{"fips_xdp_interface_info", "gauge", "", "Always 1 for an interface the XDP program is attached to; labels give the attach mode (native or generic) and program id.", "show_bpf interfaces", []string{"interface", "attach_mode", "program_id"}},
		{"fips_xdp_packets_total", "counter", "packets", "Frames the XDP program judged, by verdict (pass, drop, redirect) and reason, summed over CPUs.", "show_bpf counters[].packets", []string{"verdict", "reason"}},
		{"fips_xdp_bytes_total", "counter", "bytes", "Bytes of the frames the XDP program judged (Ethernet header included), by verdict and reason, summed over CPUs.", "show_bpf counters[].bytes", []string{"verdict", "reason"}},
		{"fips_xdp_map_entries", "gauge", "entries", "Entries in the XDP program's bounded maps: links (receiver indices of this node's sessions), ratelimit (per-source handshake buckets) and local_addrs (the node's own addresses the program acts on).", "show_bpf maps.links, maps.ratelimit_entries, maps.local_addrs", []string{"map"}},
		{"fips_xdp_map_max_entries", "gauge", "entries", "Capacity of the XDP program's bounded maps.", "show_bpf maps.links_max, maps.ratelimit_max, maps.local_addrs_max", []string{"map"}},
		{"fips_xdp_links_refused_total", "counter", "indices", "Receiver indices the links map refused because it was full (their frames are dropped in XDP).", "show_bpf maps.links_refused", nil},
		{"fips_xdp_local_addrs_refused_total", "counter", "addresses", "Node addresses the full local_addrs map could not take (frames to them pass XDP as not_local, to the UDP socket).", "show_bpf maps.local_addrs_refused", nil},
		{"fips_xdp_map_errors_total", "counter", "writes", "Link-map and local-address writes that failed.", "show_bpf maps.map_errors", nil},
		{"fips_tc_interface_info", "gauge", "", "Always 1 for an interface the tc ECN programs are attached to; attach_mode is tcx or clsact.", "show_bpf tc.interfaces", []string{"interface", "attach_mode"}},
		{"fips_tc_packets_total", "counter", "packets", "Packets the tc programs saw, by direction (egress: marked ECT(0) or ECN kept; ingress: outer not_ect, ect or ce) and reason, summed over CPUs.", "show_bpf tc_counters[].packets", []string{"direction", "reason"}},
		{"fips_tc_bytes_total", "counter", "bytes", "Bytes of the packets the tc programs saw, by direction and reason, summed over CPUs.", "show_bpf tc_counters[].bytes", []string{"direction", "reason"}},
		{"fips_afxdp_frames_total", "counter", "frames", "Frames AF_XDP sockets received from the XDP program's redirects, per interface and queue.", "show_bpf xsks[].received", []string{"interface", "queue"}},
		{"fips_afxdp_to_loop_total", "counter", "frames", "Redirected frames the AF_XDP worker left to the event loop (copied, as a socket read).", "show_bpf xsks[].to_loop", []string{"interface", "queue"}},
		{"fips_afxdp_tx_frames_total", "counter", "frames", "Frames the AF_XDP sockets' TX rings sent (completed by the kernel), per interface and queue (dataplane.afxdp_transmit: xsk).", "show_bpf xsks[].transmitted", []string{"interface", "queue"}},
		{"fips_afxdp_tx_fallback_total", "counter", "datagrams", "Datagrams the AF_XDP workers sent through the UDP sockets instead of a TX ring, by reason: no_route (no resolved Ethernet neighbour on an AF_XDP interface), too_big (over the interface MTU), no_frame (every TX frame in flight), cache_full.", "show_bpf xsk_tx", []string{"reason"}},
		{"fips_afxdp_ring_events_total", "counter", "events", "XDP_STATISTICS of each AF_XDP socket by kind: rx_dropped, rx_ring_full, fill_ring_empty, rx_invalid, tx_invalid, tx_ring_empty.", "show_bpf xsks[]", []string{"interface", "queue", "kind"}},
		{"fips_outer_ce_frames_total", "counter", "frames", "Established frames whose outer IP header carried ECN CE, handled as FMP CE (workers and event loop).", "show_status dataplane.outer_ce_frames", nil},
		{"fips_stats_history_tracked_peers", "gauge", "peers", "Peers the stats history keeps rings for (active and departed within the 24 h retention).", "show_stats_list recorder.tracked_peers", nil},
		{"fips_stats_history_max_tracked_peers", "gauge", "peers", "Bound on the peers the stats history tracks.", "show_stats_list recorder.max_tracked_peers", nil},
		{"fips_stats_history_samples_total", "counter", "samples", "One-second slots the stats history sampled on the event loop's tick.", "show_stats_list recorder.samples", nil},
		{"fips_stats_history_missed_samples_total", "counter", "samples", "One-second slots the event loop did not tick for, recorded as gaps.", "show_stats_list recorder.missed_samples", nil},
		{"fips_stats_history_peer_samples_refused_total", "counter", "peer samples", "Samples of peers left out of the stats history because every tracked peer was active.", "show_stats_list recorder.peer_samples_refused", nil},
		{"fips_stats_history_peers_displaced_total", "counter", "peers", "Departed peers whose history was dropped before its retention ended, to make room for a new peer.", "show_stats_list recorder.peers_displaced", nil},
		{"fips_stats_history_peers_expired_total", "counter", "peers", "Peers whose history was dropped 24 h after their last contact.", "show_stats_list recorder.peers_expired", nil},
		{"fips_metrics_unlabelled_peers", "gauge", "peers", "Active peers without their own series at the last scrape (over metrics.max_peer_labels), summed under peer=\"_other\".", "metrics.max_peer_labels", nil},
		{"fips_metrics_peer_labels_refused_total", "counter", "peer samples", "Peer samples folded into peer=\"_other\" because metrics.max_peer_labels was reached, summed over scrapes.", "metrics.max_peer_labels", nil},
	} {
		c.d[g.name] = prometheus.NewDesc(g.name, g.help+unitSuffix(g.unit), g.labels, nil)
		c.defs = append(c.defs, Def{Name: g.name, Type: g.typ, Unit: g.unit, Labels: g.labels, Help: g.help, Source: g.src})
	}
	sort.Slice(c.defs, func(i, j int) bool { return c.defs[i].Name < c.defs[j].Name })
	return c, nil
}

func unitSuffix(unit string) string {
	if unit == "" {
		return ""
	}
	return " Unit: " + unit + "."
}

func (c *Collector) flatFamily(fam, prefix string, members map[string]any, labels []string, rename map[string]string,
	help map[string]string, used map[string]bool, src string) (*flatFamily, error) {
	f := &flatFamily{descs: map[string]*prometheus.Desc{}, gauge: map[string]bool{}}
	for _, k := range sortedKeys(members) {
		if _, nested := members[k].(map[string]any); nested {
			return nil, fmt.Errorf("metrics: %s.%s is not a flat counter", fam, k)
		}
		hk := fam + "." + k
		h, ok := help[hk]
		if !ok {
			return nil, fmt.Errorf("metrics: no help text for %s", hk)
		}
		used[hk] = true
		base := k
		if r, ok := rename[k]; ok {
			base = r
		}
		name, typ := prefix+base+"_total", "counter"
		if fam == "transport" && (k == "connections_active" || k == "pool_inbound" || k == "pool_outbound") {
			name, typ = prefix+base, "gauge"
			f.gauge[k] = true
		}
		if fam == "rendezvous" && (k == "relays_configured" || k == "relays_connected" || k == "advert_cache_entries") {
			name, typ = prefix+base, "gauge"
			f.gauge[k] = true
		}
		unit := "events"
		switch {
		case strings.HasSuffix(base, "_bytes"):
			unit = "bytes"
		case strings.HasSuffix(base, "_packets"), fam == "ipv6", k == "packets_in":
			unit = "packets"
		case fam == "rendezvous" && k == "advert_cache_entries":
			unit = "entries"
		case fam == "rendezvous" && typ == "gauge":
			unit = "relays"
		case typ == "gauge":
			unit = "connections"
		}
		f.keys = append(f.keys, k)
		f.descs[k] = prometheus.NewDesc(name, h+unitSuffix(unit), labels, nil)
		c.defs = append(c.defs, Def{Name: name, Type: typ, Unit: unit, Labels: labels, Help: h, Source: src + "." + k})
	}
	return f, nil
}

// Defs lists every metric family the collector exports, by name.
func (c *Collector) Defs() []Def { return slices.Clone(c.defs) }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, fam := range c.famOrder {
		for _, d := range c.metricsFams[fam].descs {
			ch <- d
		}
	}
	for _, f := range []*flatFamily{c.link, c.routing, c.transport} {
		for _, d := range f.descs {
			ch <- d
		}
	}
	for _, d := range c.d {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one read of the published
// snapshot, nothing on the event loop.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.d[name], prometheus.GaugeValue, v, labels...)
	}
	counter := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.d[name], prometheus.CounterValue, v, labels...)
	}
	gauge("fips_node_info", 1, c.info.Version, c.info.Npub, c.info.NodeAddr)
	s := c.src.Snapshot()
	if l, ok := c.src.(interface{ LiveSnapshot() *node.Snapshot }); ok {
		s = l.LiveSnapshot() // the workers' counters, not a tick old
	}
	if s == nil {
		return
	}
	gauge("fips_node_state", 1, string(s.State))
	if !s.Started.IsZero() {
		gauge("fips_node_start_time_seconds", float64(s.Started.UnixNano())/1e9)
	}
	gauge("fips_peers", float64(len(s.Peers)))
	pqPeers := 0
	for _, p := range s.Peers {
		if p.PostQuantum {
			pqPeers++
		}
	}
	gauge("fips_peers_post_quantum", float64(pqPeers))
	connecting := 0
	for _, cn := range s.Connections {
		if !cn.Rekey {
			connecting++
		}
	}
	gauge("fips_connections", float64(connecting))
	gauge("fips_sessions", float64(s.Sessions))
	gauge("fips_sessions_post_quantum", float64(s.PQSessions))
	gauge("fips_tree_depth", float64(s.Tree.Depth))
	gauge("fips_tree_is_root", b2f(s.Tree.IsRoot))
	gauge("fips_tree_peers", float64(s.Tree.PeerTreeCount))
	if s.MeshSize != nil {
		gauge("fips_mesh_estimated_nodes", float64(*s.MeshSize))
	}
	gauge("fips_coord_cache_entries", float64(s.Routing.CoordCacheEntries))
	gauge("fips_identity_cache_entries", float64(s.IDCacheLen))
	gauge("fips_identity_cache_max_entries", float64(s.IDCacheMax))
	gauge("fips_pending_lookups", float64(len(s.Routing.PendingLookups)))
	counter("fips_receive_queue_drops_total", float64(s.RxDrops))
	counter("fips_receive_queue_aqm_drops_total", float64(s.AQMDrops))
	h := s.History
	gauge("fips_stats_history_tracked_peers", float64(h.TrackedPeers))
	gauge("fips_stats_history_max_tracked_peers", float64(h.MaxPeers))
	counter("fips_stats_history_samples_total", float64(h.Samples))
	counter("fips_stats_history_missed_samples_total", float64(h.MissedSamples))
	counter("fips_stats_history_peer_samples_refused_total", float64(h.PeerSamplesRefused))
	counter("fips_stats_history_peers_displaced_total", float64(h.PeersDisplaced))
	counter("fips_stats_history_peers_expired_total", float64(h.PeersExpired))
	for _, k := range sortedKeys(s.LinkMsgs) {
		counter("fips_link_messages_received_total", float64(s.LinkMsgs[k]), k)
	}
	for _, k := range sortedKeys(s.Rejected) {
		counter("fips_link_messages_rejected_total", float64(s.Rejected[k]), k)
	}
	if s.TunState != "disabled" {
		gauge("fips_tun_up", b2f(s.TunState == "active"), s.TunName)
	}

	if fams, err := flatten(node.MetricsOf(s)); err == nil {
		for _, fam := range c.famOrder {
			if m, ok := fams[fam].(map[string]any); ok {
				c.metricsFams[fam].emit(ch, m)
			}
		}
	}
	if m, err := flatten(s.PeerStats); err == nil {
		c.link.emit(ch, m)
	}
	if m, err := flatten(s.RouteStats.Limits); err == nil {
		c.routing.emit(ch, m)
	}
	for _, t := range s.Transports {
		labels := []string{strconv.FormatUint(uint64(t.ID), 10), t.Type, t.Name}
		gauge("fips_transport_up", b2f(t.State == transport.StateUp), labels...)
		gauge("fips_transport_mtu_bytes", float64(t.MTU), labels...)
		if m, err := flatten(t.Stats); err == nil {
			c.transport.emit(ch, m, labels...)
		}
	}
	c.collectPeers(s, gauge, counter)
	c.collectBPF(s, gauge, counter)
}

// collectBPF reads the XDP program's counters from the kernel, when the
// source has them; in userspace only fips_dataplane_mode is exported.
func (c *Collector) collectBPF(s *node.Snapshot, gauge, counter func(string, float64, ...string)) {
	if s.Dataplane.Mode != "" {
		gauge("fips_dataplane_mode", 1, s.Dataplane.Mode)
	}
	counter("fips_outer_ce_frames_total", float64(s.Dataplane.OuterCE))
	bs, ok := c.src.(BPFSource)
	if !ok || s.Dataplane.Mode != ctl.DataplaneXDP {
		return
	}
	v, err := bs.BPF()
	if err != nil || v.Maps == nil {
		return
	}
	for _, i := range v.Interfaces {
		gauge("fips_xdp_interface_info", 1, i.Name, i.AttachMode, strconv.FormatUint(uint64(i.ProgramID), 10))
	}
	for _, ct := range v.Counters {
		counter("fips_xdp_packets_total", float64(ct.Packets), ct.Verdict, ct.Reason)
		counter("fips_xdp_bytes_total", float64(ct.Bytes), ct.Verdict, ct.Reason)
	}
	for _, x := range v.XSKs {
		q := strconv.Itoa(x.Queue)
		counter("fips_afxdp_frames_total", float64(x.Received), x.Interface, q)
		counter("fips_afxdp_to_loop_total", float64(x.ToLoop), x.Interface, q)
		if v.XSKTx.Enabled {
			counter("fips_afxdp_tx_frames_total", float64(x.Transmitted), x.Interface, q)
		}
		for _, k := range []struct {
			kind string
			n    uint64
		}{{"rx_dropped", x.RxDropped}, {"rx_ring_full", x.RxRingFull}, {"fill_ring_empty", x.RxFillRingEmpty},
			{"rx_invalid", x.RxInvalidDescs}, {"tx_invalid", x.TxInvalidDescs}, {"tx_ring_empty", x.TxRingEmpty}} {
			counter("fips_afxdp_ring_events_total", float64(k.n), x.Interface, q, k.kind)
		}
	}
	if t := v.XSKTx; t.Enabled {
		for _, k := range []struct {
			reason string
			n      uint64
		}{{"no_route", t.FallbackNoRoute}, {"too_big", t.FallbackTooBig}, {"no_frame", t.FallbackNoFrame}, {"cache_full", t.FallbackCacheFull}} {
			counter("fips_afxdp_tx_fallback_total", float64(k.n), k.reason)
		}
	}
	for _, i := range v.TC.Interfaces {
		gauge("fips_tc_interface_info", 1, i.Name, i.AttachMode)
	}
	for _, ct := range v.TCCounters {
		counter("fips_tc_packets_total", float64(ct.Packets), ct.Direction, ct.Reason)
		counter("fips_tc_bytes_total", float64(ct.Bytes), ct.Direction, ct.Reason)
	}
	m := v.Maps
	gauge("fips_xdp_map_entries", float64(m.Links), "links")
	gauge("fips_xdp_map_entries", float64(m.Ratelimit), "ratelimit")
	gauge("fips_xdp_map_max_entries", float64(m.LinksMax), "links")
	gauge("fips_xdp_map_entries", float64(m.LocalAddrs), "local_addrs")
	gauge("fips_xdp_map_max_entries", float64(m.RatelimitMax), "ratelimit")
	gauge("fips_xdp_map_max_entries", float64(m.LocalAddrsMax), "local_addrs")
	counter("fips_xdp_links_refused_total", float64(m.LinksRefused))
	counter("fips_xdp_local_addrs_refused_total", float64(m.LocalAddrsRefused))
	counter("fips_xdp_map_errors_total", float64(m.MapErrors))
}

func (c *Collector) collectPeers(s *node.Snapshot, gauge, counter func(string, float64, ...string)) {
	own, others := c.assignLabels(s.Peers)
	var sum struct{ bs, br, ps, pr, goodput float64 }
	for _, p := range others {
		sum.bs += float64(p.Stats.BytesSent)
		sum.br += float64(p.Stats.BytesRecv)
		sum.ps += float64(p.Stats.PacketsSent)
		sum.pr += float64(p.Stats.PacketsRecv)
		sum.goodput += p.MMP.GoodputBps
	}
	for _, p := range own {
		id := p.NodeAddr
		gauge("fips_peer_info", 1, id, node.DisplayName(p.Alias, p.Npub), p.Npub, p.TransportType, string(p.Direction))
		counter("fips_peer_sent_bytes_total", float64(p.Stats.BytesSent), id)
		counter("fips_peer_received_bytes_total", float64(p.Stats.BytesRecv), id)
		counter("fips_peer_sent_packets_total", float64(p.Stats.PacketsSent), id)
		counter("fips_peer_received_packets_total", float64(p.Stats.PacketsRecv), id)
		m := p.MMP
		gauge("fips_peer_goodput_bytes_per_second", m.GoodputBps, id)
		if m.SRTTMs != nil {
			gauge("fips_peer_srtt_seconds", *m.SRTTMs/1e3, id)
		}
		gauge("fips_peer_loss_ratio", m.LossRate, id)
		gauge("fips_peer_jitter_seconds", float64(m.JitterUs)/1e6, id)
		gauge("fips_peer_etx", m.ETX, id)
		gauge("fips_peer_delivery_forward_ratio", m.DeliveryRatioForward, id)
		gauge("fips_peer_delivery_reverse_ratio", m.DeliveryRatioReverse, id)
		if !p.Since.IsZero() {
			gauge("fips_peer_connected_seconds", max(0, s.At.Sub(p.Since).Seconds()), id)
		}
		if p.TreeView.HasTreePosition {
			gauge("fips_peer_tree_depth", float64(p.TreeView.Depth), id)
		}
		gauge("fips_peer_tree_parent", b2f(p.TreeView.IsParent), id)
	}
	if len(others) > 0 {
		counter("fips_peer_sent_bytes_total", sum.bs, OtherPeer)
		counter("fips_peer_received_bytes_total", sum.br, OtherPeer)
		counter("fips_peer_sent_packets_total", sum.ps, OtherPeer)
		counter("fips_peer_received_packets_total", sum.pr, OtherPeer)
		gauge("fips_peer_goodput_bytes_per_second", sum.goodput, OtherPeer)
	}
	c.mu.Lock()
	refused := c.refused
	c.mu.Unlock()
	gauge("fips_metrics_unlabelled_peers", float64(len(others)))
	counter("fips_metrics_peer_labels_refused_total", float64(refused))
}

// assignLabels splits the peers into those with their own series and the
// rest. A peer keeps its label while it stays up, so its series do not
// move to another peer; freed slots go to waiting peers in address order.
func (c *Collector) assignLabels(peers []node.PeerView) (own, others []node.PeerView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	present := make(map[string]bool, len(peers))
	for _, p := range peers {
		present[p.NodeAddr] = true
	}
	for a := range c.labelled {
		if !present[a] {
			delete(c.labelled, a)
		}
	}
	for _, p := range peers { // snapshot peers are in address order
		if !c.labelled[p.NodeAddr] && len(c.labelled) < c.max {
			c.labelled[p.NodeAddr] = true
		}
		if c.labelled[p.NodeAddr] {
			own = append(own, p)
		} else {
			others = append(others, p)
		}
	}
	c.refused += uint64(len(others))
	return own, others
}

func (f *flatFamily) emit(ch chan<- prometheus.Metric, m map[string]any, labels ...string) {
	for _, k := range f.keys {
		v, ok := number(m[k])
		if !ok {
			continue
		}
		vt := prometheus.CounterValue
		if f.gauge[k] {
			vt = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(f.descs[k], vt, v, labels...)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// flatten renders v as show_* does (encoding/json) and decodes it back
// into maps, numbers kept exact as json.Number.
func flatten(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("metrics: encode %T: %w", v, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("metrics: decode %T: %w", v, err)
	}
	return m, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
