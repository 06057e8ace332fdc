package node

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/wire"
)

// The probe is a reachability diagnosis run by the node on request of the
// control socket (probe_start / probe_poll / probe_cancel). It cannot be
// one round trip — a lookup and an end-to-end handshake take seconds — so
// each probe is a job in a small table, advanced on the event loop by a
// driver goroutine every probeTick and on every poll, and its report is
// read by polling. All job state is touched only on the event loop.
//
// The rtt stage reads the session's MMP: a sample arrives with the first
// ReceiverReport the remote sends on a warmup from us.

const (
	maxProbes        = 8                      // in flight; finished jobs awaiting their poll do not count
	probeTick        = 100 * time.Millisecond // driver period; stage timings are quantized to it
	probeReap        = 30 * time.Second       // a finished job nobody polls is forgotten after this
	probeSessionMS   = 5000                   // handshake budget floor (two resends)
	probeDoTimeout   = 200 * time.Millisecond // one driver step's wait for the loop
	probeRTTMS       = 3000                   // rtt budget floor: the remote's report cold start and two of its ticks
	probeWarmupRetry = time.Second            // the one warmup retransmit
	// maxFinishedProbes bounds the finished reports awaiting their poll.
	maxFinishedProbes = 64
)

// Stage verdicts and the reasons the probe can report.
const (
	verdictPending = "pending"
	verdictRunning = "running"
	verdictOK      = "ok"
	verdictSkipped = "skipped"
	verdictFailed  = "failed"
)

// ProbeStage is the part common to every stage of a probe report.
type ProbeStage struct {
	Verdict   string  `json:"verdict"`
	Reason    *string `json:"reason"`
	Detail    *string `json:"detail"`
	ElapsedMs *uint64 `json:"elapsed_ms"`
}

// ProbeBloom is the bloom stage: whether a peer's filter claims the target,
// which decides whether a LookupRequest goes out.
type ProbeBloom struct {
	ProbeStage
	Fanout *int `json:"fanout"` // tree peers the LookupRequest was sent to; null when none was issued
}

// ProbeDiscovery is the wait for the target's coordinates.
type ProbeDiscovery struct {
	ProbeStage
	Source              *string  `json:"source"` // cache | lookup | direct_peer
	Attempts            *int     `json:"attempts"`
	AttemptTimeoutsSecs []uint64 `json:"attempt_timeouts_secs"`
}

// ProbeNextHop is the first hop this node would choose.
type ProbeNextHop struct {
	NodeAddr       string `json:"node_addr"`
	DisplayName    string `json:"display_name"`
	Class          string `json:"class"`
	DirectPeer     bool   `json:"direct_peer"`
	LeavesTreeWalk bool   `json:"leaves_tree_walk"`
}

// ProbePath is computed locally from coordinates; nothing beyond the first
// hop is observed.
type ProbePath struct {
	ProbeStage
	ComputedLocally bool          `json:"computed_locally"`
	Observed        bool          `json:"observed"`
	CoordsKnown     bool          `json:"coords_known"`
	OurCoords       []string      `json:"our_coords"`
	TheirCoords     []string      `json:"their_coords"`
	OurDepth        *int          `json:"our_depth"`
	TheirDepth      *int          `json:"their_depth"`
	SameRoot        *bool         `json:"same_root"`
	LCA             *string       `json:"lca"`
	LCADepth        *int          `json:"lca_depth"`
	TreeHopsUp      *int          `json:"tree_hops_up"`
	TreeHopsDown    *int          `json:"tree_hops_down"`
	TreeDistance    *int          `json:"tree_distance"`
	NextHop         *ProbeNextHop `json:"next_hop"`
	NoHopReason     *string       `json:"no_hop_reason"`
}

// ProbeSession is the end-to-end session stage.
type ProbeSession struct {
	ProbeStage
	Preexisting bool    `json:"preexisting"`
	Established bool    `json:"established"`
	PathMTU     *uint16 `json:"path_mtu,omitempty"`
}

// ProbeRTT is the round-trip measurement.
type ProbeRTT struct {
	ProbeStage
	RTTMs         *uint64  `json:"rtt_ms,omitempty"`
	SRTTMs        *float64 `json:"srtt_ms,omitempty"`
	ReportsSeen   uint64   `json:"reports_seen"`
	Samples       uint64   `json:"samples"`
	ZeroSamples   uint64   `json:"zero_samples"`
	ArithFailures uint64   `json:"arith_failures"`
}

// ProbeCleanup says what the probe left behind.
type ProbeCleanup struct {
	SessionCreatedAndTornDown bool    `json:"session_created_and_torn_down"`
	SessionLeftIntact         bool    `json:"session_left_intact"`
	LeftIntactReason          *string `json:"left_intact_reason"` // preexisting | adopted_by_traffic | replaced
	LookupIssued              bool    `json:"lookup_issued"`
	CoordsWereCached          bool    `json:"coords_were_cached"`
	IdentityWasCached         bool    `json:"identity_was_cached"`
	WarmupsSent               uint8   `json:"warmups_sent"`
}

// ProbeTarget names what is probed.
type ProbeTarget struct {
	Npub        string `json:"npub"`
	NodeAddr    string `json:"node_addr"`
	DisplayName string `json:"display_name"`
	IPv6Addr    string `json:"ipv6_addr"`
}

// ProbeReport is probe_poll's report, in the shape of upstream's
// probe_report.json.
type ProbeReport struct {
	ProbeID   uint64         `json:"probe_id"`
	Target    ProbeTarget    `json:"target"`
	Overall   string         `json:"overall"` // running | ok | partial | failed | cancelled
	ElapsedMs uint64         `json:"elapsed_ms"`
	TickMs    uint64         `json:"tick_ms"`
	Bloom     ProbeBloom     `json:"bloom"`
	Discovery ProbeDiscovery `json:"discovery"`
	Path      ProbePath      `json:"path"`
	Session   ProbeSession   `json:"session"`
	RTT       ProbeRTT       `json:"rtt"`
	Cleanup   ProbeCleanup   `json:"cleanup"`
}

// probe stages, in order.
const (
	stageBloom = iota
	stageDiscovery
	stagePath
	stageSession
	stageRTT
	stageDone
)

type probeJob struct {
	rep        ProbeReport
	pk         identity.PublicKey
	target     identity.NodeAddr
	started    time.Time
	ended      time.Time
	stage      int
	stageStart time.Time
	deadline   time.Time

	lookupOutcome route.StartOutcome
	skipReason    string            // bloom's skip reason, repeated by discovery
	nextHop       identity.NodeAddr // the path stage's next hop (Path.NextHop)

	sessionAtStart bool      // a session to the target existed when the probe began
	owned          bool      // the probe opened the session
	initiatedAt    time.Time // when it sent the SessionSetup
	ownedStart     time.Time // the owned session's establishment time

	rttBase    mmp.Stats // session MMP counters when the rtt stage began
	lastWarmup time.Time
}

func (j *probeJob) finished() bool { return j.stage == stageDone }

type probeTable struct {
	jobs    map[uint64]*probeJob
	next    uint64
	driving bool
	evicted atomic.Uint64 // finished reports dropped unpolled (read by show_status)
}

// probes is the node's probe table; its jobs are touched only on the
// event loop.
func (n *Node) probes() *probeTable { return n.probeTab }

// registerProbe installs probe_start, probe_poll and probe_cancel.
func (n *Node) registerProbe(r ctlRegistry) {
	r.Register("probe_start", n.apiProbeStart)
	r.Register("probe_poll", n.apiProbePoll)
	r.Register("probe_cancel", n.apiProbeCancel)
}

func strp(s string) *string { return &s }
func intp(i int) *int       { return &i }

// probeBudget is the whole-probe deadline: two ticks for the bloom gate,
// the lookup ladder plus two ticks, the handshake floor, and four ticks
// for rtt (upstream's derivation, with this probe's tick).
func (n *Node) probeBudget() (time.Duration, []uint64) {
	var ladder time.Duration
	var secs []uint64
	for _, d := range n.core.route.Config().LookupAttemptTimeouts {
		ladder += d
		secs = append(secs, uint64(d/time.Second))
	}
	if secs == nil {
		secs = []uint64{}
	}
	return 2*probeTick + ladder + 2*probeTick + probeSessionMS*time.Millisecond + max(probeRTTMS*time.Millisecond, 4*probeTick), secs
}

func (n *Node) apiProbeStart(ctx context.Context, raw json.RawMessage) (any, error) {
	npub, pk, err := npubParam("probe_start", raw)
	if err != nil {
		return nil, err
	}
	if pk.NodeAddr() == n.id.NodeAddr() {
		return nil, ctl.Errorf("cannot probe this node")
	}
	type started struct {
		data  map[string]any
		drive bool
	}
	v, err := n.Do(ctx, func(now time.Time) any {
		data, drive, err := n.probeStart(now, npub, pk)
		if err != nil {
			return err
		}
		return started{data, drive}
	})
	if err != nil {
		return nil, err
	}
	if e, ok := v.(error); ok {
		return nil, e
	}
	s := v.(started)
	if s.drive {
		n.bg.Add(1)
		go func() {
			defer n.bg.Done()
			n.driveProbes()
		}()
	}
	return s.data, nil
}

// probeStart admits a probe (on the loop) and takes its first step.
func (n *Node) probeStart(now time.Time, npub string, pk identity.PublicKey) (map[string]any, bool, error) {
	t := n.probes()
	inFlight := 0
	for _, j := range t.jobs {
		if !j.finished() {
			inFlight++
		}
	}
	if inFlight >= maxProbes {
		return nil, false, ctl.Errorf("too many probes in flight")
	}
	target := pk.NodeAddr()
	budget, secs := n.probeBudget()
	// The key must be known for the lookup's proof to verify and for the
	// handshake; upstream seeds the identity cache the same way, and names
	// the target by its short npub from now on (seededNames).
	n.seeded.add(target, pk.Npub())
	n.core.now = now
	n.core.LearnIdentity(pk)
	j := &probeJob{pk: pk, target: target, started: now, stageStart: now, deadline: now.Add(budget)}
	_, j.sessionAtStart = n.core.sess.Session(target)
	j.rep = ProbeReport{ProbeID: t.next, Overall: "running", TickMs: uint64(probeTick / time.Millisecond),
		Target: ProbeTarget{Npub: npub, NodeAddr: target.String(), DisplayName: n.probeName(target, npub),
			IPv6Addr: target.IPv6().String()},
		Discovery: ProbeDiscovery{AttemptTimeoutsSecs: secs},
		Path:      ProbePath{ComputedLocally: true, OurCoords: []string{}, TheirCoords: []string{}},
		// Upstream reads the identity cache after seeding it, so its
		// identity_was_cached is true whether or not the key was known
		// before (unless the cache holds no key at all).
		Cleanup: ProbeCleanup{CoordsWereCached: n.core.route.Cache().Contains(now, target),
			IdentityWasCached: n.core.ids.Has(target)},
	}
	for _, s := range j.stages() {
		s.Verdict = verdictPending
	}
	t.next++
	t.jobs[j.rep.ProbeID] = j
	n.stepProbe(now, j)
	n.trimFinishedProbes()
	drive := !t.driving
	t.driving = true
	budgetMs := uint64(budget / time.Millisecond)
	logging.WithTarget(n.log, "fips::node::handlers::probe").Info("Probe started", "npub", npub, "probe_id", j.rep.ProbeID, "budget_ms", budgetMs)
	return map[string]any{"probe_id": j.rep.ProbeID, "npub": npub, "node_addr": target.String(),
		"display_name": j.rep.Target.DisplayName, "budget_ms": budgetMs}, drive, nil
}

// trimFinishedProbes drops the oldest finished, unpolled reports past
// maxFinishedProbes (fips-go: upstream keeps every one for its reap time,
// so probes that fail at once pile up as fast as a client can start them).
// A dropped report's id is then unknown, as a reaped one's is.
func (n *Node) trimFinishedProbes() {
	t := n.probes()
	for {
		finished := 0
		var oldest *probeJob
		for _, j := range t.jobs {
			if !j.finished() {
				continue
			}
			finished++
			if oldest == nil || j.ended.Before(oldest.ended) || (j.ended.Equal(oldest.ended) && j.rep.ProbeID < oldest.rep.ProbeID) {
				oldest = j
			}
		}
		if finished <= maxFinishedProbes {
			return
		}
		delete(t.jobs, oldest.rep.ProbeID)
		if e := t.evicted.Add(1); e&(e-1) == 0 { // 1, 2, 4 …: bounded log volume
			n.log.Warn("Probe report dropped before it was polled: too many finished probes held",
				"probe_id", oldest.rep.ProbeID, "max", maxFinishedProbes, "dropped_total", e)
		}
	}
}

// probeName is the target's display name, as upstream's probe names it
// (peer_display_name), with the key the probe resolved.
func (n *Node) probeName(a identity.NodeAddr, npub string) string {
	if npub == "" {
		npub = n.liveNpub(a)
	}
	return n.displayName(a, npub)
}

func probeID(raw json.RawMessage) (uint64, error) {
	return ctl.ParseParams(raw).Uint64("probe_id")
}

func (n *Node) apiProbePoll(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := probeID(raw)
	if err != nil {
		return nil, err
	}
	v, err := n.Do(ctx, func(now time.Time) any { return n.probePoll(now, id) })
	if err != nil {
		return nil, err
	}
	if e, ok := v.(error); ok {
		return nil, e
	}
	return v, nil
}

// probePoll advances the job and reports it; a finished job's report is
// delivered once, then the job is forgotten.
func (n *Node) probePoll(now time.Time, id uint64) any {
	t := n.probes()
	j, ok := t.jobs[id]
	if !ok {
		return ctl.Errorf("unknown probe id: %d", id)
	}
	n.stepProbe(now, j)
	state := "running"
	if j.finished() {
		state = "done"
		delete(t.jobs, id)
	}
	return map[string]any{"state": state, "report": n.probeReport(now, j)}
}

func (n *Node) apiProbeCancel(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := probeID(raw)
	if err != nil {
		return nil, err
	}
	v, err := n.Do(ctx, func(now time.Time) any {
		j, ok := n.probes().jobs[id]
		if !ok {
			return ctl.Errorf("unknown probe id: %d", id)
		}
		n.cancelProbe(now, j)
		return map[string]any{"probe_id": id, "cancelled": true}
	})
	if err != nil {
		return nil, err
	}
	if e, ok := v.(error); ok {
		return nil, e
	}
	return v, nil
}

// probeReport copies the report with its running figures filled in.
func (n *Node) probeReport(now time.Time, j *probeJob) ProbeReport {
	r := j.rep
	end := j.ended
	if end.IsZero() {
		end = now
	}
	r.ElapsedMs = uint64(max(0, end.Sub(j.started).Milliseconds()))
	// Names as of this poll, as upstream's report names them.
	r.Target.DisplayName = n.probeName(j.target, r.Target.Npub)
	if h := r.Path.NextHop; h != nil {
		nh := *h
		nh.DisplayName = n.probeName(j.nextHop, "")
		r.Path.NextHop = &nh
	}
	return r
}

// driveProbes steps every unfinished probe each probeTick until none is
// left or the node stops. It exits within probeTick+probeDoTimeout of the
// event loop ending (the node's state leaves running first).
func (n *Node) driveProbes() {
	tick := time.NewTicker(probeTick)
	defer tick.Stop()
	for range tick.C {
		switch n.State() {
		case StateDraining, StateStopping, StateStopped, StateFailed:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeDoTimeout)
		v, err := n.Do(ctx, func(now time.Time) any { return n.stepProbes(now) })
		cancel()
		if err == nil && !v.(bool) {
			return
		}
	}
}

// stepProbes advances every job and forgets finished ones left unpolled
// for probeReap. It reports whether the driver is still needed, and
// clears the table's driving flag when it is not.
func (n *Node) stepProbes(now time.Time) bool {
	t := n.probes()
	live := false
	for id, j := range t.jobs {
		if j.finished() {
			if now.Sub(j.ended) >= probeReap {
				delete(t.jobs, id)
				continue
			}
		} else {
			n.stepProbe(now, j)
		}
		live = true
	}
	if !live {
		t.driving = false
	}
	return live
}

func (j *probeJob) stages() []*ProbeStage {
	return []*ProbeStage{&j.rep.Bloom.ProbeStage, &j.rep.Discovery.ProbeStage, &j.rep.Path.ProbeStage,
		&j.rep.Session.ProbeStage, &j.rep.RTT.ProbeStage}
}

// settle records the current stage's verdict and moves to the next.
func (j *probeJob) settle(now time.Time, verdict, reason, detail string) {
	s := j.stages()[j.stage]
	s.Verdict = verdict
	if reason != "" {
		s.Reason = strp(reason)
	}
	if detail != "" {
		s.Detail = strp(detail)
	}
	ms := uint64(max(0, now.Sub(j.stageStart).Milliseconds()))
	s.ElapsedMs = &ms
	j.stage++
	j.stageStart = now
}

// skipRest marks every unsettled stage skipped.
func (j *probeJob) skipRest(now time.Time, reason, detail string) {
	for j.stage < stageDone {
		s := j.stages()[j.stage]
		s.Verdict = verdictSkipped
		s.Reason = strp(reason)
		if detail != "" {
			s.Detail = strp(detail)
		}
		j.stage++
	}
	j.stageStart = now
}

// stepProbe advances j as far as it can go at now.
func (n *Node) stepProbe(now time.Time, j *probeJob) {
	n.core.now = now
	for !j.finished() {
		if !now.Before(j.deadline) {
			j.stages()[j.stage].Verdict = verdictRunning
			j.settle(now, verdictFailed, n.timeoutReason(j), "probe budget exhausted")
			j.skipRest(now, "not_reached", "")
			n.finishProbe(now, j, "")
			return
		}
		before := j.stage
		switch j.stage {
		case stageBloom:
			n.probeBloom(now, j)
		case stageDiscovery:
			n.probeDiscovery(now, j)
		case stagePath:
			n.probePath(now, j)
		case stageSession:
			n.probeSession(now, j)
		case stageRTT:
			n.probeRTT(now, j)
		}
		if j.stage == stageDone {
			n.finishProbe(now, j, "")
			return
		}
		if j.stage == before {
			return // waiting
		}
	}
}

func (n *Node) timeoutReason(j *probeJob) string {
	switch j.stage {
	case stageDiscovery:
		return n.discoveryFailReason(j)
	case stageSession:
		return "handshake_timeout"
	case stageRTT:
		return "no_report"
	case stagePath:
		return "no_next_hop"
	}
	return "no_response"
}

// probeBloom is the gate: cached coordinates or a neighbour need no
// lookup (asked in that order, as upstream asks: a direct peer whose
// coordinates a session cached is skipped as cached); otherwise a lookup
// is started, and it goes out only when some peer's filter claims the
// target.
func (n *Node) probeBloom(now time.Time, j *probeJob) {
	switch {
	case n.core.route.Cache().Contains(now, j.target):
		j.skipReason = "cached"
		j.rep.Discovery.Source = strp("cache")
		j.settle(now, verdictSkipped, "cached", "")
		return
	case n.peers.Peer(j.target) != nil:
		j.skipReason = "direct_peer"
		j.rep.Discovery.Source = strp("direct_peer")
		j.settle(now, verdictSkipped, "direct_peer", "")
		return
	}
	// Core.StartLookup, keeping the fanout it discards.
	delete(n.core.lookups, j.target)
	out, sent := n.core.route.StartLookup(now, j.target)
	j.lookupOutcome = out
	j.rep.Cleanup.LookupIssued = true
	switch out {
	case route.StartSent:
		j.rep.Bloom.Fanout = intp(sent)
		j.rep.Discovery.Attempts = intp(1)
		j.settle(now, verdictOK, "", "")
	case route.StartDeduplicated:
		j.settle(now, verdictOK, "", "joined a lookup for this target already in flight")
	case route.StartBloomMiss:
		j.rep.Bloom.Fanout = intp(0)
		j.settle(now, verdictFailed, "bloom_miss", "")
		j.skipRest(now, "not_reached", "")
	case route.StartSuppressed:
		j.settle(now, verdictFailed, "backoff_suppressed", "")
		j.skipRest(now, "not_reached", "")
	case route.StartZeroFanout:
		j.rep.Bloom.Fanout = intp(0)
		j.settle(now, verdictFailed, "no_tree_peers", "")
		j.skipRest(now, "not_reached", "")
	default:
		j.settle(now, verdictFailed, "lookup_refused", "the router refused the lookup ("+out.String()+")")
		j.skipRest(now, "not_reached", "")
	}
}

func (n *Node) discoveryFailReason(j *probeJob) string {
	switch j.lookupOutcome {
	case route.StartDeduplicated:
		return "already_pending"
	case route.StartSent:
		return "bloom_unconfirmed"
	}
	return "no_response"
}

func (n *Node) probeDiscovery(now time.Time, j *probeJob) {
	if !j.rep.Cleanup.LookupIssued {
		j.settle(now, verdictSkipped, j.skipReason, "")
		return
	}
	if n.core.route.Cache().Contains(now, j.target) {
		j.rep.Discovery.Source = strp("lookup")
		j.settle(now, verdictOK, "", "")
		return
	}
	if ev, ok := n.core.LookupResult(j.target); ok && ev.Outcome == route.LookupTimedOut {
		j.settle(now, verdictFailed, n.discoveryFailReason(j),
			fmt.Sprintf("no LookupResponse after %d attempt(s)", len(j.rep.Discovery.AttemptTimeoutsSecs)))
		j.skipRest(now, "not_reached", "")
		return
	}
	j.rep.Discovery.Verdict = verdictRunning
	if s := n.Snapshot(); s != nil {
		for _, row := range s.Routing.PendingLookups {
			if row.Target == j.target {
				j.rep.Discovery.Attempts = intp(row.Attempt)
			}
		}
	}
}

func addrStrings(c []identity.NodeAddr) []string {
	out := make([]string, len(c))
	for i, a := range c {
		out[i] = a.String()
	}
	return out
}

// probePath describes, from coordinates alone, the tree walk to the target
// and the first hop this node would choose. It never stops the probe.
// The target's coordinates are the coordinate cache's only, as upstream's
// (describe_path over coord_cache): a direct peer nothing cached is
// skipped as direct_peer with no tree facts, not described from the
// coordinates its last TreeAnnounce carried.
func (n *Node) probePath(now time.Time, j *probeJob) {
	p := &j.rep.Path
	ours := n.core.tree.Coords()
	theirs, ok := n.core.route.Cache().Get(now, j.target)
	if ok && len(theirs) > 0 && len(ours) > 0 {
		p.CoordsKnown = true
		p.OurCoords = addrStrings(ours)
		p.TheirCoords = addrStrings(theirs)
		od, td := len(ours)-1, len(theirs)-1
		p.OurDepth, p.TheirDepth = intp(od), intp(td)
		same := ours[od] == theirs[td]
		p.SameRoot = &same
		if same {
			common := 0
			for i, k := od, td; i >= 0 && k >= 0 && ours[i] == theirs[k]; i, k = i-1, k-1 {
				common++
			}
			lcaDepth := common - 1
			p.LCA = strp(ours[od-lcaDepth].String())
			p.LCADepth = intp(lcaDepth)
			p.TreeHopsUp, p.TreeHopsDown = intp(od-lcaDepth), intp(td-lcaDepth)
			p.TreeDistance = intp(od - lcaDepth + td - lcaDepth)
		}
	}
	hop, rt, found := n.core.route.FindNextHop(now, j.target)
	if found {
		// The crosslink classes leave the up-then-down walk tree_hops_*
		// describe; a direct peer, lateral or not, is one hop (upstream
		// decides it by class too).
		leaves := false
		switch rt.Class {
		case route.ClassTreeDownCross, route.ClassCrosslinkDescend, route.ClassCrosslinkAscend:
			leaves = true
		}
		j.nextHop = hop
		p.NextHop = &ProbeNextHop{NodeAddr: hop.String(), Class: rt.Class.String(),
			DirectPeer: hop == j.target, LeavesTreeWalk: leaves}
	}
	switch {
	case !p.CoordsKnown:
		if !found {
			p.NoHopReason = strp("no_coords")
		}
		if n.peers.Peer(j.target) != nil {
			j.settle(now, verdictSkipped, "direct_peer", "")
		} else {
			j.settle(now, verdictFailed, "no_next_hop", "")
		}
	case !*p.SameRoot:
		if !found {
			p.NoHopReason = strp("disjoint_trees")
		}
		j.settle(now, verdictFailed, "disjoint_trees", "")
	case !found:
		p.NoHopReason = strp("no_closer_peer")
		j.settle(now, verdictFailed, "no_next_hop", "")
	default:
		j.settle(now, verdictOK, "", "")
	}
}

func sessionMTU(n *Node, in session.Info) *uint16 {
	m := in.PathMTU
	if c, ok := n.core.sess.PathMTU(in.RemoteAddr); ok && (m == 0 || c < m) {
		m = c
	}
	if m == 0 {
		return nil
	}
	return &m
}

// probeSession opens a session unless one exists, and waits for it.
func (n *Node) probeSession(now time.Time, j *probeJob) {
	s := &j.rep.Session
	in, exists := n.core.sess.Session(j.target)
	if s.Verdict == verdictPending {
		s.Verdict = verdictRunning
		switch {
		case exists && !j.sessionAtStart && in.Initiator:
			// Opened since the probe began: the node initiates a session
			// when a lookup it started is answered, and that lookup was
			// the probe's. The teardown checks that no traffic adopted it.
			j.owned, j.initiatedAt = true, now
		case exists:
			s.Preexisting = true
		default:
			if err := n.core.sess.RetryAfterDiscovery(now, j.target); err != nil {
				j.settle(now, verdictFailed, "send_error", err.Error())
				j.skipRest(now, "not_reached", "")
				return
			}
			in, exists = n.core.sess.Session(j.target)
			if !exists || !in.Initiator {
				j.settle(now, verdictFailed, "send_error", "no session entry after initiating")
				j.skipRest(now, "not_reached", "")
				return
			}
			j.owned, j.initiatedAt = true, now
		}
	}
	if !exists {
		if j.owned {
			j.settle(now, verdictFailed, "handshake_timeout", "the session was dropped before it was established")
		} else {
			j.settle(now, verdictFailed, "preexisting", "the pre-existing session went away during the probe")
		}
		j.skipRest(now, "not_reached", "")
		return
	}
	if in.State != session.StateEstablished {
		if now.Sub(j.stageStart) >= probeSessionMS*time.Millisecond {
			j.settle(now, verdictFailed, "handshake_timeout", fmt.Sprintf("not established after %d resend(s)", in.ResendCount))
			j.skipRest(now, "not_reached", "")
		}
		return
	}
	s.Established = true
	s.PathMTU = sessionMTU(n, in)
	if j.owned {
		j.ownedStart = in.SessionStart
		j.settle(now, verdictOK, "", "")
	} else {
		j.settle(now, verdictSkipped, "preexisting", "")
	}
}

// probeRTT waits for a round-trip sample from the session's MMP. The
// remote sends a ReceiverReport only for an interval in which it received
// something, so the probe sends a CoordsWarmup (ignored by the receiver
// beyond its metrics), once more after probeWarmupRetry if no report came.
func (n *Node) probeRTT(now time.Time, j *probeJob) {
	r := &j.rep.RTT
	link, ok := n.core.SessionMMP(j.target)
	if !ok {
		j.settle(now, verdictFailed, "no_report", "the session went away before it could be measured")
		return
	}
	st := link.Stats()
	if r.Verdict == verdictPending {
		r.Verdict = verdictRunning
		j.rttBase = st
		n.probeWarmup(now, j)
		return
	}
	r.ReportsSeen = st.ReportsSeen - j.rttBase.ReportsSeen
	r.Samples = st.RTTSamples - j.rttBase.RTTSamples
	r.ZeroSamples = st.RTTZero - j.rttBase.RTTZero
	r.ArithFailures = st.RTTArithFail - j.rttBase.RTTArithFail
	if r.Samples > 0 {
		if d, ok := link.LastRTT(); ok {
			ms := uint64(d / time.Millisecond)
			r.RTTMs = &ms
		}
		if d, ok := link.SRTT(); ok {
			ms := float64(d.Microseconds()) / 1000
			r.SRTTMs = &ms
		}
		j.settle(now, verdictOK, "", "")
		return
	}
	if r.ZeroSamples > 0 {
		// MMP timestamps are whole milliseconds (upstream's wire format):
		// a faster round trip measures 0. The path answered, so that is
		// a success, reported as such rather than as a failure.
		zero := uint64(0)
		r.RTTMs = &zero
		j.settle(now, verdictOK, "", "round trip below the 1 ms resolution of MMP timestamps")
		return
	}
	if r.ReportsSeen == 0 && j.rep.Cleanup.WarmupsSent < 2 && now.Sub(j.lastWarmup) >= probeWarmupRetry {
		n.probeWarmup(now, j)
	}
	if now.Sub(j.stageStart) < probeRTTMS*time.Millisecond {
		return
	}
	switch {
	case r.ReportsSeen == 0:
		j.settle(now, verdictFailed, "no_report", "")
	case r.ArithFailures > 0:
		j.settle(now, verdictFailed, "bad_timestamp_echo", "")
	default:
		j.settle(now, verdictFailed, "no_echo", "")
	}
}

func (n *Node) probeWarmup(now time.Time, j *probeJob) {
	j.lastWarmup = now
	if err := n.core.sess.SendMessage(now, j.target, wire.SessionMsgCoordsWarmup, nil); err == nil {
		j.rep.Cleanup.WarmupsSent++
	}
}

// cancelProbe settles j now: unsettled stages are skipped, a session it
// opened is torn down.
func (n *Node) cancelProbe(now time.Time, j *probeJob) {
	if j.finished() {
		return
	}
	j.skipRest(now, "not_reached", "cancelled")
	n.finishProbe(now, j, "cancelled")
}

// finishProbe runs the terminal actions and computes overall.
func (n *Node) finishProbe(now time.Time, j *probeJob, overall string) {
	j.stage, j.ended = stageDone, now
	c := &j.rep.Cleanup
	in, exists := n.core.sess.Session(j.target)
	switch {
	case j.rep.Session.Preexisting:
		// Not ours: never torn down, whatever became of it.
		c.SessionLeftIntact, c.LeftIntactReason = true, strp("preexisting")
	case j.owned && exists:
		switch {
		case !in.Initiator || (!j.ownedStart.IsZero() && !in.SessionStart.Equal(j.ownedStart)):
			c.SessionLeftIntact, c.LeftIntactReason = true, strp("replaced")
		case in.PacketsSent > 0 || in.PacketsRecv > 0 || in.PendingPackets > 0:
			c.SessionLeftIntact, c.LeftIntactReason = true, strp("adopted_by_traffic")
		default:
			n.core.sess.Remove(now, j.target)
			c.SessionCreatedAndTornDown = true
		}
	}
	if overall == "" {
		overall = "partial"
		r := &j.rep
		switch {
		case r.Bloom.Verdict == verdictFailed || r.Discovery.Verdict == verdictFailed || r.Session.Verdict == verdictFailed:
			overall = "failed"
		case r.RTT.Verdict == verdictOK:
			overall = "ok"
		}
	}
	j.rep.Overall = overall
}
