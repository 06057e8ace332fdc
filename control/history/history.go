package history

import (
	"math"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// tickSlack is how early a tick may come and still take the next
// one-second slot: the loop's ticker is not exact.
const tickSlack = 100 * time.Millisecond

// maxGapSlots bounds the missed slots one Tick fills with NaN (a host that
// slept for a week): a day of them already leaves every ring all NaN.
const maxGapSlots = int(PeerRetention / time.Second)

// NodeSample is the node's state at a tick: gauges as they are, counters
// as running totals (the history derives the per-second rates).
type NodeSample struct {
	MeshSize       *uint64 // nil without an estimate (sampled as 0, as upstream)
	TreeDepth      uint32
	PeerCount      uint64
	ParentSwitches uint64 // total
	BytesIn        uint64 // total
	BytesOut       uint64 // total
	PacketsIn      uint64 // total
	PacketsOut     uint64 // total
	LossRate       float64
	ActiveSessions uint64
}

// PeerSample is one active peer's state at a tick. A tracked peer missing
// from a tick's samples is absent: NaN in each of its rings.
type PeerSample struct {
	Addr identity.NodeAddr
	Npub string
	// SRTTMs and LossRate are nil before the first measurement.
	SRTTMs   *float64
	LossRate *float64
	// Totals of the peer's current link; a total that goes down (a new
	// link) is a gap, not a negative rate.
	BytesIn, BytesOut, PacketsIn, PacketsOut, ECNCE uint64
}

// Series is a query's answer: samples oldest first, NaN for a gap.
type Series struct {
	Metric             string
	Unit               string
	GranularitySeconds uint64
	Values             []float64
}

// PeerInfo is one tracked peer's lifecycle.
type PeerInfo struct {
	Addr        identity.NodeAddr
	Npub        string // the key's npub as last sampled
	FirstSeen   time.Time
	LastContact time.Time
}

// Sparklines are the fast-ring tails show_status inlines.
type Sparklines struct {
	MeshSize, TreeDepth, PeerCount, BytesIn, BytesOut, LossRate []float64
}

// Stats count what the history recorded and refused (fields in JSON key
// order).
type Stats struct {
	// MaxPeers bounds TrackedPeers.
	MaxPeers int `json:"max_tracked_peers"`
	// MissedSamples counts the one-second slots the loop did not tick
	// for (recorded as gaps).
	MissedSamples uint64 `json:"missed_samples"`
	// PeerSamplesRefused counts samples of peers left untracked because
	// MaxPeers peers with rings were all active.
	PeerSamplesRefused uint64 `json:"peer_samples_refused"`
	// PeersDisplaced counts departed peers whose rings were dropped before
	// their retention ended, to make room for a new peer.
	PeersDisplaced uint64 `json:"peers_displaced"`
	// PeersExpired counts peers dropped a retention period after their
	// last contact.
	PeersExpired uint64 `json:"peers_expired"`
	// Samples counts the one-second slots sampled.
	Samples uint64 `json:"samples"`
	// TrackedPeers is how many peers have rings now.
	TrackedPeers int `json:"tracked_peers"`
}

// Config sizes a History.
type Config struct {
	// MaxPeers bounds the tracked peers; 0 means DefaultMaxPeers.
	MaxPeers int
	// TickInterval is how often the caller ticks (default 1 s). A tick
	// covers that many one-second slots; only seconds beyond it count as
	// missed.
	TickInterval time.Duration
}

// History is the node's statistics history. The zero value is not
// usable; call New.
type History struct {
	node     [numMetrics]ring
	peers    map[identity.NodeAddr]*peerRings
	maxPeers int
	pushes   uint64    // slots recorded since the start
	next     time.Time // when the next slot is due; zero before the first
	perTick  int       // slots one tick covers (the tick interval in seconds)
	stats    Stats
	spark    Sparklines
}

type peerRings struct {
	rings       [numPeerMetrics]ring
	npub        string
	firstSeen   time.Time
	lastContact time.Time
	absent      int // consecutive slots without a sample
}

// New returns an empty history. The node rings are allocated at once
// (fixed memory); a peer's grow with its samples.
func New(c Config) *History {
	if c.MaxPeers <= 0 {
		c.MaxPeers = DefaultMaxPeers
	}
	h := &History{peers: map[identity.NodeAddr]*peerRings{}, maxPeers: c.MaxPeers,
		perTick: max(1, int((c.TickInterval+time.Second-1)/time.Second))}
	for i := range h.node {
		h.node[i].init(metricInfo[i].agg, true)
	}
	h.stats.MaxPeers = c.MaxPeers
	return h
}

// Tick records the slots that have come due by now, one a second from
// the first: nothing when the next is not due yet, else the sample in the
// slots the tick interval covers, preceded by a gap for every further
// second the loop missed. Rates are per second: a counter's growth is
// spread over every second since the last tick. It reports whether it
// recorded a sample.
func (h *History) Tick(now time.Time, node NodeSample, peers []PeerSample) bool {
	slots := 1
	if !h.next.IsZero() {
		late := now.Sub(h.next)
		if late < -tickSlack {
			return false
		}
		if late > 0 {
			slots += int(late / time.Second)
		}
	}
	// A tick every step covers step's seconds: those slots all get the
	// sample; the seconds beyond are ones the loop missed.
	filled := min(slots, h.perTick)
	gaps := slots - filled
	if gaps > maxGapSlots {
		gaps, slots = maxGapSlots, maxGapSlots+filled
		h.next = time.Time{} // re-anchor after the host slept
	}
	for range gaps {
		h.pushGap()
	}
	h.stats.MissedSamples += uint64(gaps)
	h.sample(now, node, peers, float64(slots), filled)
	if h.next.IsZero() {
		h.next = now.Add(time.Second)
	} else {
		h.next = h.next.Add(time.Duration(slots) * time.Second)
	}
	h.stats.Samples += uint64(filled)
	h.expire(now)
	h.stats.TrackedPeers = len(h.peers)
	h.spark = Sparklines{MeshSize: h.Recent(MeshSize, SparklineLen), TreeDepth: h.Recent(TreeDepth, SparklineLen),
		PeerCount: h.Recent(PeerCount, SparklineLen), BytesIn: h.Recent(BytesIn, SparklineLen),
		BytesOut: h.Recent(BytesOut, SparklineLen), LossRate: h.Recent(LossRate, SparklineLen)}
	return true
}

// pushGap records a slot with no data.
func (h *History) pushGap() {
	for i := range h.node {
		h.node[i].push(math.NaN())
	}
	for _, p := range h.peers {
		p.pushAbsent()
	}
	h.advance()
}

// advance counts a slot and folds each minute into the slow rings.
func (h *History) advance() {
	h.pushes++
	if h.pushes%DownsampleFactor != 0 {
		return
	}
	for i := range h.node {
		h.node[i].flush()
	}
	for _, p := range h.peers {
		for i := range p.rings {
			p.rings[i].flush()
		}
	}
}

// sample records one tick's sample into reps slots (more than one when
// the tick interval is longer than a second), rates per second over per
// seconds.
func (h *History) sample(now time.Time, s NodeSample, peers []PeerSample, per float64, reps int) {
	var nv [numMetrics]float64
	for i := range h.node {
		r := &h.node[i]
		var v float64
		switch Metric(i) {
		case MeshSize:
			if s.MeshSize != nil {
				v = float64(*s.MeshSize)
			}
		case TreeDepth:
			v = float64(s.TreeDepth)
		case PeerCount:
			v = float64(s.PeerCount)
		case ParentSwitches:
			v = r.nodeDelta(s.ParentSwitches, per)
		case BytesIn:
			v = r.nodeDelta(s.BytesIn, per)
		case BytesOut:
			v = r.nodeDelta(s.BytesOut, per)
		case PacketsIn:
			v = r.nodeDelta(s.PacketsIn, per)
		case PacketsOut:
			v = r.nodeDelta(s.PacketsOut, per)
		case LossRate:
			v = s.LossRate
		case ActiveSessions:
			v = float64(s.ActiveSessions)
		}
		nv[i] = v
	}

	present := make(map[identity.NodeAddr]bool, len(peers))
	for _, ps := range peers {
		present[ps.Addr] = true
	}
	type peerValues struct {
		p *peerRings
		v [numPeerMetrics]float64
	}
	pvs := make([]peerValues, 0, len(peers))
	done := make(map[identity.NodeAddr]bool, len(peers))
	for _, ps := range peers {
		if done[ps.Addr] {
			continue
		}
		done[ps.Addr] = true
		p := h.peers[ps.Addr]
		if p == nil {
			if !h.makeRoom(present) {
				h.stats.PeerSamplesRefused++
				continue
			}
			p = newPeerRings(now)
			h.peers[ps.Addr] = p
		}
		pvs = append(pvs, peerValues{p, p.values(now, ps, per)})
	}
	for range reps {
		for i := range h.node {
			h.node[i].push(nv[i])
		}
		for _, pv := range pvs {
			for i := range pv.p.rings {
				pv.p.rings[i].push(pv.v[i])
			}
		}
		for a, p := range h.peers {
			if !done[a] {
				p.pushAbsent()
			}
		}
		h.advance()
	}
}

// makeRoom reports whether a new peer may be tracked, dropping the
// departed peer heard from longest ago when the table is full.
func (h *History) makeRoom(present map[identity.NodeAddr]bool) bool {
	if len(h.peers) < h.maxPeers {
		return true
	}
	var victim identity.NodeAddr
	var oldest time.Time
	found := false
	for a, p := range h.peers {
		if present[a] {
			continue
		}
		if !found || p.lastContact.Before(oldest) || p.lastContact.Equal(oldest) && a.Compare(victim) < 0 {
			victim, oldest, found = a, p.lastContact, true
		}
	}
	if !found {
		return false
	}
	delete(h.peers, victim)
	h.stats.PeersDisplaced++
	return true
}

// expire drops peers a retention period after their last contact.
func (h *History) expire(now time.Time) {
	for a, p := range h.peers {
		if now.Sub(p.lastContact) >= PeerRetention {
			delete(h.peers, a)
			h.stats.PeersExpired++
		}
	}
}

// Query is a node metric's last window of samples at granularity g,
// always the window's full width (clipped to the ring's capacity), NaN
// in front where the ring is younger than the window.
func (h *History) Query(m Metric, window time.Duration, g Granularity) Series {
	return series(&h.node[m], m.Name(), m.Unit(), window, g)
}

// PeerQuery is Query for one tracked peer's metric; false when the peer
// is not tracked.
func (h *History) PeerQuery(a identity.NodeAddr, m PeerMetric, window time.Duration, g Granularity) (Series, bool) {
	p := h.peers[a]
	if p == nil {
		return Series{}, false
	}
	return series(&p.rings[m], m.Name(), m.Unit(), window, g), true
}

func series(r *ring, name, unit string, window time.Duration, g Granularity) Series {
	want := min(uint64(window/time.Second)/g.Seconds(), uint64(g.capacity()))
	src := &r.fast
	if g == Slow {
		src = &r.slow
	}
	vals := make([]float64, want)
	pad := int(want) - min(int(want), src.len())
	for i := range pad {
		vals[i] = math.NaN()
	}
	src.copyTail(vals[pad:])
	return Series{Metric: name, Unit: unit, GranularitySeconds: g.Seconds(), Values: vals}
}

// Recent is a node metric's last n fast samples (fewer while the ring is
// younger), oldest first.
func (h *History) Recent(m Metric, n int) []float64 {
	src := &h.node[m].fast
	out := make([]float64, min(n, src.len()))
	src.copyTail(out)
	return out
}

// Sparklines are show_status' tails as of the last sample. The slices
// are the caller's to keep: the history never writes them again.
func (h *History) Sparklines() Sparklines { return h.spark }

// HasPeer reports whether a peer has rings.
func (h *History) HasPeer(a identity.NodeAddr) bool { return h.peers[a] != nil }

// Peers lists the tracked peers, in node-address order.
func (h *History) Peers() []PeerInfo {
	out := make([]PeerInfo, 0, len(h.peers))
	for a, p := range h.peers {
		out = append(out, PeerInfo{Addr: a, Npub: p.npub, FirstSeen: p.firstSeen, LastContact: p.lastContact})
	}
	slices.SortFunc(out, func(x, y PeerInfo) int { return x.Addr.Compare(y.Addr) })
	return out
}

// Stats is what the history recorded and refused.
func (h *History) Stats() Stats { return h.stats }

// HasData reports whether a sample was ever recorded.
func (h *History) HasData() bool { return !h.next.IsZero() }

func newPeerRings(now time.Time) *peerRings {
	p := &peerRings{firstSeen: now, lastContact: now}
	for i := range p.rings {
		p.rings[i].init(peerMetricInfo[i].agg, false)
	}
	return p
}

// values is a present peer's sample (its counters' rates over per
// seconds), noting the contact.
func (p *peerRings) values(now time.Time, s PeerSample, per float64) [numPeerMetrics]float64 {
	p.lastContact, p.absent = now, 0
	if s.Npub != "" {
		p.npub = s.Npub
	}
	opt := func(v *float64) float64 {
		if v == nil {
			return math.NaN()
		}
		return *v
	}
	totals := [numPeerMetrics]uint64{PeerBytesIn: s.BytesIn, PeerBytesOut: s.BytesOut, PeerPacketsIn: s.PacketsIn,
		PeerPacketsOut: s.PacketsOut, PeerECNCE: s.ECNCE}
	var v [numPeerMetrics]float64
	for i := range p.rings {
		switch PeerMetric(i) {
		case PeerSRTTMs:
			v[i] = opt(s.SRTTMs)
		case PeerLossRate:
			v[i] = opt(s.LossRate)
		default:
			v[i] = p.rings[i].peerDelta(totals[i], per)
		}
	}
	return v
}

// pushAbsent records a slot without the peer. Its counters lose their
// baseline, so the first sample after it is a gap rather than the growth
// over the whole absence; a peer absent for the fast ring's whole span
// frees its fast samples (all gaps, which a query pads in anyway).
func (p *peerRings) pushAbsent() {
	p.absent++
	for i := range p.rings {
		r := &p.rings[i]
		r.hasPrev = false
		if p.absent > FastCapacity {
			r.fast.reset()
			r.acc.push(math.NaN())
			continue
		}
		r.push(math.NaN())
	}
}

// ring is one metric's two rings and the minute being folded.
type ring struct {
	fast, slow samples
	acc        accum
	agg        aggregation
	prev       uint64 // last total of a counter metric
	hasPrev    bool
}

func (r *ring) init(agg aggregation, prealloc bool) {
	r.agg = agg
	r.fast.max, r.slow.max = FastCapacity, SlowCapacity
	if prealloc {
		r.fast.buf = make([]float64, 0, FastCapacity)
		r.slow.buf = make([]float64, 0, SlowCapacity)
	}
	r.acc.reset()
}

func (r *ring) push(v float64) {
	r.fast.push(v)
	r.acc.push(v)
}

func (r *ring) flush() {
	if v, ok := r.acc.reduce(r.agg); ok {
		r.slow.push(v)
	}
	r.acc.reset()
}

// nodeDelta is a node counter's rate: 0 on the first sample and when the
// total went down (node totals never reset), as upstream.
func (r *ring) nodeDelta(total uint64, per float64) float64 {
	prev, had := r.prev, r.hasPrev
	r.prev, r.hasPrev = total, true
	if !had || total < prev {
		return 0
	}
	return float64(total-prev) / per
}

// peerDelta is a peer counter's rate: a gap on the first sample after
// none and when the total went down (a new link), as upstream.
func (r *ring) peerDelta(total uint64, per float64) float64 {
	prev, had := r.prev, r.hasPrev
	r.prev, r.hasPrev = total, true
	if !had || total < prev {
		return math.NaN()
	}
	return float64(total-prev) / per
}

// accum folds up to a minute of fast samples; NaN samples count towards
// total only.
type accum struct {
	sum   float64
	count int
	last  float64
	total int
}

func (a *accum) reset() { *a = accum{last: math.NaN()} }

func (a *accum) push(v float64) {
	a.total++
	if !math.IsNaN(v) {
		a.sum += v
		a.count++
		a.last = v
	}
}

// reduce is the minute's slow sample; false when no slot was recorded in
// it at all.
func (a *accum) reduce(agg aggregation) (float64, bool) {
	switch {
	case a.total == 0:
		return 0, false
	case a.count == 0:
		return math.NaN(), true
	case agg == aggLast:
		return a.last, true
	case agg == aggSum:
		return a.sum, true
	default:
		return a.sum / float64(a.count), true
	}
}

// samples is a bounded ring of float64s, growing to max and then
// overwriting the oldest.
type samples struct {
	buf  []float64
	head int // index of the oldest sample once full
	max  int
}

func (s *samples) len() int { return len(s.buf) }

func (s *samples) push(v float64) {
	if len(s.buf) < s.max {
		if len(s.buf) == cap(s.buf) {
			nb := make([]float64, len(s.buf), min(s.max, max(64, 2*cap(s.buf))))
			copy(nb, s.buf)
			s.buf = nb
		}
		s.buf = append(s.buf, v)
		return
	}
	s.buf[s.head] = v
	s.head = (s.head + 1) % s.max
}

// copyTail fills dst with the newest len(dst) samples, oldest first;
// len(dst) must not exceed len().
func (s *samples) copyTail(dst []float64) {
	n := len(s.buf)
	for i := range dst {
		dst[i] = s.buf[(s.head+n-len(dst)+i)%n]
	}
}

func (s *samples) reset() { s.buf, s.head = nil, 0 }
