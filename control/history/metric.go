// Package history keeps the node's statistics history, as upstream's
// stats_history module does: for every node metric and, per peer, every
// peer metric, a fast ring of one-second samples (3600: an hour) and a
// slow ring of one-minute samples (1440: a day), folded from the fast
// samples each minute. It backs show_stats_list, show_stats_history,
// show_stats_all_history, show_stats_peers, show_stats_history_all_peers
// and show_status' sparklines.
//
// The history owns no clock and no goroutine: the node's event loop calls
// Tick with the time of its tick, and a test drives it with any clock it
// likes. It is not safe for concurrent use; the loop owns it. Memory is
// bounded: node rings are fixed, a peer's rings grow only to the ring
// capacities, and at most MaxPeers peers are tracked (the rest are
// counted, never stored). A gap in the data (a peer absent, no MMP
// measurement yet, a counter that went backwards, a second the loop
// missed) is a NaN sample, rendered as JSON null.
package history

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Ring capacities and retention (upstream's constants).
const (
	// FastCapacity is the fast ring's length: 3600 one-second samples.
	FastCapacity = 3600
	// SlowCapacity is the slow ring's length: 1440 one-minute samples.
	SlowCapacity = 1440
	// DownsampleFactor is how many fast samples fold into one slow one.
	DownsampleFactor = 60
	// PeerRetention is how long a peer's rings outlive its last contact.
	PeerRetention = 24 * time.Hour
	// DefaultMaxPeers bounds the peers tracked when Config leaves it 0.
	DefaultMaxPeers = 256
	// SparklineLen is how many fast samples show_status inlines.
	SparklineLen = 30
)

// aggregation is how a minute of fast samples folds into a slow one; NaN
// samples take no part, and a minute of only NaN folds to NaN.
type aggregation uint8

const (
	aggLast aggregation = iota
	aggSum
	aggMean
)

// Metric is a node metric.
type Metric uint8

// The node metrics, in upstream's order (show_stats_list, all_history).
const (
	MeshSize Metric = iota
	TreeDepth
	PeerCount
	ParentSwitches
	BytesIn
	BytesOut
	PacketsIn
	PacketsOut
	LossRate
	ActiveSessions
	numMetrics
)

var metricInfo = [numMetrics]struct {
	name, unit string
	agg        aggregation
}{
	MeshSize:       {"mesh_size", "nodes", aggLast},
	TreeDepth:      {"tree_depth", "hops", aggLast},
	PeerCount:      {"peer_count", "peers", aggLast},
	ParentSwitches: {"parent_switches", "events/s", aggSum},
	BytesIn:        {"bytes_in", "bytes/s", aggMean},
	BytesOut:       {"bytes_out", "bytes/s", aggMean},
	PacketsIn:      {"packets_in", "packets/s", aggMean},
	PacketsOut:     {"packets_out", "packets/s", aggMean},
	LossRate:       {"loss_rate", "fraction", aggMean},
	ActiveSessions: {"active_sessions", "sessions", aggLast},
}

// Metrics lists every node metric in upstream's order.
func Metrics() []Metric {
	out := make([]Metric, numMetrics)
	for i := range out {
		out[i] = Metric(i)
	}
	return out
}

// Name is the metric's wire name.
func (m Metric) Name() string { return metricInfo[m].name }

// Unit is the metric's unit as show_stats_list spells it.
func (m Metric) Unit() string { return metricInfo[m].unit }

// ParseMetric reads a node metric name, with upstream's error text.
func ParseMetric(s string) (Metric, error) {
	for i, mi := range metricInfo {
		if mi.name == s {
			return Metric(i), nil
		}
	}
	return 0, fmt.Errorf("unknown metric: %s", s)
}

// PeerMetric is a per-peer metric. Its names overlap the node metrics'
// (loss_rate, bytes_in, …): a query is per peer when it names a peer.
type PeerMetric uint8

// The per-peer metrics, in upstream's order.
const (
	PeerSRTTMs PeerMetric = iota
	PeerLossRate
	PeerBytesIn
	PeerBytesOut
	PeerPacketsIn
	PeerPacketsOut
	PeerECNCE
	numPeerMetrics
)

var peerMetricInfo = [numPeerMetrics]struct {
	name, unit string
	agg        aggregation
	counter    bool // sampled as the per-second delta of a total
}{
	PeerSRTTMs:     {"srtt_ms", "ms", aggMean, false},
	PeerLossRate:   {"loss_rate", "fraction", aggMean, false},
	PeerBytesIn:    {"bytes_in", "bytes/s", aggMean, true},
	PeerBytesOut:   {"bytes_out", "bytes/s", aggMean, true},
	PeerPacketsIn:  {"packets_in", "packets/s", aggMean, true},
	PeerPacketsOut: {"packets_out", "packets/s", aggMean, true},
	PeerECNCE:      {"ecn_ce", "events/s", aggSum, true},
}

// PeerMetrics lists every per-peer metric in upstream's order.
func PeerMetrics() []PeerMetric {
	out := make([]PeerMetric, numPeerMetrics)
	for i := range out {
		out[i] = PeerMetric(i)
	}
	return out
}

// Name is the metric's wire name.
func (m PeerMetric) Name() string { return peerMetricInfo[m].name }

// Unit is the metric's unit as show_stats_list spells it.
func (m PeerMetric) Unit() string { return peerMetricInfo[m].unit }

// ParsePeerMetric reads a per-peer metric name, with upstream's error text.
func ParsePeerMetric(s string) (PeerMetric, error) {
	for i, mi := range peerMetricInfo {
		if mi.name == s {
			return PeerMetric(i), nil
		}
	}
	return 0, fmt.Errorf("unknown peer metric: %s", s)
}

// Granularity selects the ring a query reads.
type Granularity uint8

// Granularities.
const (
	Fast Granularity = iota // 1 s samples
	Slow                    // 1 min samples
)

// Seconds is the sample period.
func (g Granularity) Seconds() uint64 {
	if g == Slow {
		return DownsampleFactor
	}
	return 1
}

func (g Granularity) capacity() int {
	if g == Slow {
		return SlowCapacity
	}
	return FastCapacity
}

// ParseGranularity reads "1s" or "1m", with upstream's error text.
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "1s":
		return Fast, nil
	case "1m":
		return Slow, nil
	}
	return 0, fmt.Errorf("unknown granularity: %s (expected 1s or 1m)", s)
}

// maxWindowSecs bounds a parsed window so no arithmetic on it overflows;
// anything beyond the slow ring's day is clipped by the query anyway.
const maxWindowSecs = math.MaxInt64 / int64(time.Second)

// ParseWindow reads a window "<N>s", "<N>m" or "<N>h", with upstream's
// error texts. Windows too long for a time.Duration are refused.
func ParseWindow(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	_, size := utf8.DecodeLastRuneInString(s)
	num, unit := s[:len(s)-size], s[len(s)-size:]
	// Rust's u64 parse takes one leading '+'; ParseUint takes none.
	n, err := strconv.ParseUint(strings.TrimPrefix(num, "+"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid duration: %s", s)
	}
	var mul uint64
	switch unit {
	case "s":
		mul = 1
	case "m":
		mul = 60
	case "h":
		mul = 3600
	default:
		return 0, fmt.Errorf("unknown duration unit: %s (expected s, m, h)", unit)
	}
	if n > uint64(maxWindowSecs)/mul {
		return 0, fmt.Errorf("invalid duration: %s", s)
	}
	return time.Duration(n*mul) * time.Second, nil
}
