package route

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/wire"
)

// MinActionablePathMTU is upstream's MIN_ACTIONABLE_PATH_MTU: a path MTU a
// remote reports below it is ignored, not applied.
const MinActionablePathMTU = 256

// recentRequest remembers a LookupRequest seen here: for dedup and for
// sending the response back the way the request came.
type recentRequest struct {
	from      identity.NodeAddr
	ts        int64 // Unix ms
	forwarded bool  // a response already went back through us
}

// pendingLookup is a lookup this node started.
type pendingLookup struct {
	initiated int64
	lastSent  int64
	attempt   int // 1 = the first request
	badProofs int // responses whose proof failed, this attempt
}

// backoffEntry is upstream's LookupBackoff entry.
type backoffEntry struct {
	until    int64
	failures uint32
}

// LookupOutcome is how a lookup this node started ended.
type LookupOutcome uint8

// Lookup outcomes reported through OnLookup.
const (
	// LookupFound: a response with a valid proof arrived and its
	// coordinates are cached. The node resets the warmup counter of an
	// established session to the target, mirrors PathMTU into its
	// path-MTU clamp map, and retries queued traffic. Upstream accepts a
	// verified response even when no lookup was pending (its request id is
	// not checked), and so does this.
	LookupFound LookupOutcome = iota + 1
	// LookupTimedOut: every attempt went unanswered. The node records
	// the outcome (probe reports it) and answers every IPv6 packet queued
	// for the target with Destination Unreachable.
	LookupTimedOut
)

func (o LookupOutcome) String() string {
	switch o {
	case LookupFound:
		return "found"
	case LookupTimedOut:
		return "timed_out"
	}
	return "unknown"
}

// LookupEvent reports the end of a lookup.
type LookupEvent struct {
	Target    identity.NodeAddr
	Outcome   LookupOutcome
	RequestID uint64              // Found: the response's request id
	Coords    []identity.NodeAddr // Found: the target's coordinates (a copy)
	// PathMTU (Found) is the response's path MTU when at least
	// MinActionablePathMTU, else 0 (then it was not stored either, and
	// error_signals.lookup_resp_mtu_below_floor was counted).
	PathMTU  uint16
	Failures uint32 // TimedOut: consecutive failures recorded for the target
}

// OnLookup sets the function called, synchronously, when a lookup ends.
// It must not call back into the Router.
func (r *Router) OnLookup(fn func(now time.Time, ev LookupEvent)) { r.onLookup = fn }

func (r *Router) emit(now time.Time, ev LookupEvent) {
	if r.onLookup != nil {
		r.onLookup(now, ev)
	}
}

// StartOutcome is what StartLookup did.
type StartOutcome uint8

// StartLookup outcomes.
const (
	StartSent         StartOutcome = iota + 1 // requests went to at least one tree peer
	StartZeroFanout                           // no tree peer's filter has the target: failed at once
	StartDeduplicated                         // a lookup for the target is already pending
	StartSuppressed                           // backoff after recent failures (off by default)
	StartBloomMiss                            // no peer's filter has the target: not in the mesh
	StartRefused                              // too many lookups pending
)

func (o StartOutcome) String() string {
	switch o {
	case StartSent:
		return "sent"
	case StartZeroFanout:
		return "zero_fanout"
	case StartDeduplicated:
		return "deduplicated"
	case StartSuppressed:
		return "suppressed"
	case StartBloomMiss:
		return "bloom_miss"
	case StartRefused:
		return "refused"
	}
	return "unknown"
}

// StartLookup asks the mesh for target's coordinates (upstream
// maybe_initiate_lookup): unless one is pending, backoff suppresses it, or
// no peer's filter may reach the target, it sends a LookupRequest with a
// fresh random id to every tree peer whose filter contains the target
// (never to non-tree peers) and returns how many. Tick retries with a
// fresh id after each attempt timeout and gives up after the last; the
// end is reported through OnLookup.
func (r *Router) StartLookup(now time.Time, target identity.NodeAddr) (StartOutcome, int) {
	n := ms(now)
	L := &r.stats.Lookup
	if _, ok := r.pending[target]; ok {
		L.ReqDeduplicated++
		r.log.Debug("Discovery lookup deduplicated, already pending", "target_node", r.name(target))
		return StartDeduplicated, 0
	}
	if b, ok := r.backoff[target]; ok && n < b.until {
		L.ReqBackoffSuppressed++
		r.log.Debug("Discovery lookup suppressed by backoff", "target_node", r.name(target), "failures", b.failures)
		return StartSuppressed, 0
	}
	reachable := false
	for _, p := range r.links.Peers() {
		if r.flt.MayReach(p, target) || r.fullTreeFilter(p) {
			reachable = true
			break
		}
	}
	if !reachable {
		r.recordFailure(target, n)
		L.ReqBloomMiss++
		r.log.Debug("Discovery skipped, target not in any peer bloom filter", "target_node", r.name(target))
		return StartBloomMiss, 0
	}
	if len(r.pending) >= r.cfg.MaxPendingLookups {
		r.stats.Limits.PendingLookupsFull++
		return StartRefused, 0
	}
	r.pending[target] = &pendingLookup{initiated: n, lastSent: n, attempt: 1}
	sent := r.initiate(target)
	if sent == 0 {
		delete(r.pending, target)
		r.recordFailure(target, n)
		r.log.Debug("Discovery failed, no tree peers with bloom match", "target_node", r.name(target))
		return StartZeroFanout, 0
	}
	return StartSent, sent
}

// LookupPending reports whether a lookup for target is in flight.
func (r *Router) LookupPending(target identity.NodeAddr) bool {
	_, ok := r.pending[target]
	return ok
}

// ResetLookupBackoff forgets every recorded lookup failure (upstream, on
// topology changes: parent switch, self-root, new peer, first RTT).
func (r *Router) ResetLookupBackoff() { clear(r.backoff) }

func (r *Router) backoffEnabled() bool {
	return r.cfg.LookupBackoffBase > 0 && r.cfg.LookupBackoffMax > 0
}

// recordFailure is upstream's LookupBackoff::record_failure: suppress for
// base·2^(failures−1), capped. With backoff disabled (the default) nothing
// is stored, since nothing could ever be suppressed.
func (r *Router) recordFailure(target identity.NodeAddr, now int64) uint32 {
	e, ok := r.backoff[target]
	if !r.backoffEnabled() {
		return 1
	}
	if !ok {
		if len(r.backoff) >= r.cfg.MaxBackoffEntries {
			r.stats.Limits.BackoffFull++
			return 1
		}
		e = &backoffEntry{}
		r.backoff[target] = e
	}
	e.failures++
	base, capMs := r.cfg.LookupBackoffBase.Milliseconds(), r.cfg.LookupBackoffMax.Milliseconds()
	d := capMs
	if shift := e.failures - 1; shift < 63 && base <= capMs>>shift {
		d = min(base<<shift, capMs)
	}
	e.until = now + d
	return e.failures
}

// pruneBackoff drops what a configuration change made useless.
func (r *Router) pruneBackoff(int64) {
	if !r.backoffEnabled() {
		clear(r.backoff)
	}
}

// initiate sends one attempt (upstream initiate_lookup) and returns the
// number of tree peers it was sent to.
func (r *Router) initiate(target identity.NodeAddr) int {
	r.stats.Lookup.ReqInitiated++
	id, err := r.randomID()
	if err != nil {
		r.log.Warn("lookup request id", "err", err)
		return 0
	}
	req := wire.LookupRequest{RequestID: id, Target: target, Origin: r.self, TTL: r.cfg.LookupTTL, MinMTU: r.cfg.LookupMinMTU, OriginCoords: r.myCoords()}
	var to []identity.NodeAddr
	for _, p := range r.links.Peers() {
		if ((r.flt.MayReach(p, target) && r.topo.IsTreePeer(p)) || r.fullTreeFilter(p)) && (p == target || r.transitPeer(p)) && r.meetsMTU(p, req.MinMTU) {
			to = append(to, p)
		}
	}
	r.log.Debug("Discovery lookup initiated", "request_id", id, "target", r.name(target), "ttl", req.TTL,
		"peer_count", len(to), "total_peers", len(r.links.Peers()))
	if len(to) == 0 {
		return 0
	}
	r.fanOut(req, to)
	return len(to)
}

// fullTreeFilter reports whether lookups may go to p although its filter
// says nothing (FullFilterLookups): p is a tree peer whose latest filter
// was refused over the FPR cap. Only tree peers: a non-tree peer's filter
// covers nearly the whole mesh in any case, and sending lookups to every
// such peer would flood them.
func (r *Router) fullTreeFilter(p identity.NodeAddr) bool {
	return r.cfg.FullFilterLookups && r.flt.OverCap(p) && r.topo.IsTreePeer(p)
}

func (r *Router) myCoords() wire.Coords {
	c := r.topo.Coords()
	if len(c) == 0 {
		return wire.CoordsOf(r.self)
	}
	return wire.CoordsOf(c...)
}

func (r *Router) randomID() (uint64, error) {
	rnd := r.rnd
	if rnd == nil {
		rnd = rand.Reader
	}
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// fanOut encodes req once per link format and sends it to each peer:
// master's layout, and next's (no origin coordinates) to the peers whose
// link is in next's format.
func (r *Router) fanOut(req wire.LookupRequest, to []identity.NodeAddr) {
	buf := r.scratch(req.Len())
	if _, err := req.MarshalTo(buf); err != nil {
		r.log.Debug("encoding lookup request", "err", err)
		return
	}
	var next []byte
	for _, p := range to {
		b := buf
		if r.linkIsNext(p) {
			if next == nil {
				v1 := wire.LookupRequestV1{RequestID: req.RequestID, Target: req.Target, Origin: req.Origin, TTL: req.TTL, MinMTU: req.MinMTU}
				next = make([]byte, v1.Len())
				if _, err := v1.MarshalTo(next); err != nil {
					r.log.Debug("encoding lookup request", "err", err)
					return
				}
			}
			b = next
		}
		if err := r.links.Send(p, false, b); err != nil {
			r.log.Debug("sending lookup request", "peer", p, "err", err)
		}
	}
}

// meetsMTU reports whether the link to p can carry a lookup asking for
// min: next's rule (min 0, or a link MTU not known, passes).
func (r *Router) meetsMTU(p identity.NodeAddr, min uint16) bool {
	if min == 0 {
		return true
	}
	mtu := r.links.LinkMTU(p)
	return mtu <= 0 || mtu >= int(min)
}

// peerProfiles is what a Links carrying links in upstream next's format
// also says: the profile a peer declared on its link (false: none, a
// master link). Upstream next routes and looks up only through Full
// peers (docs/next.md §8–10).
type peerProfiles interface {
	PeerProfile(p identity.NodeAddr) (wire.NodeProfile, bool)
}

// transitPeer reports whether p may carry others' traffic and lookups:
// a master link's peer, or a next one that declared itself Full.
func (r *Router) transitPeer(p identity.NodeAddr) bool {
	pp, ok := r.links.(peerProfiles)
	if !ok {
		return true
	}
	prof, declared := pp.PeerProfile(p)
	return !declared || prof == wire.ProfileFull
}

// nextLinks is what a Links carrying links in upstream next's format
// also says: whether the link to p is one (lookups have next's layouts
// on it: docs/next.md §9). A Links without it has master's links only.
type nextLinks interface {
	LinkIsNext(p identity.NodeAddr) bool
}

func (r *Router) linkIsNext(p identity.NodeAddr) bool {
	nl, ok := r.links.(nextLinks)
	return ok && nl.LinkIsNext(p)
}

// parseRequest decodes a LookupRequest in the layout of from's link. One
// in next's layout gets a one-entry origin_coords holding its origin,
// which is what it becomes when forwarded over a master link (master
// decodes the field and does not use it).
func (r *Router) parseRequest(from identity.NodeAddr, msg []byte) (wire.LookupRequest, error) {
	if !r.linkIsNext(from) {
		return wire.ParseLookupRequest(msg)
	}
	v1, err := wire.ParseLookupRequestV1(msg)
	if err != nil {
		return wire.LookupRequest{}, err
	}
	return wire.LookupRequest{RequestID: v1.RequestID, Target: v1.Target, Origin: v1.Origin, TTL: v1.TTL, MinMTU: v1.MinMTU,
		OriginCoords: wire.CoordsOf(v1.Origin)}, nil
}

// parseResponse decodes a LookupResponse in the layout of from's link;
// next's TLVs (none defined) are dropped, so a response forwarded over a
// master link has master's layout.
func (r *Router) parseResponse(from identity.NodeAddr, msg []byte) (wire.LookupResponse, error) {
	if !r.linkIsNext(from) {
		return wire.ParseLookupResponse(msg)
	}
	v1, err := wire.ParseLookupResponseV1(msg)
	return v1.LookupResponse, err
}

// pollPending is upstream's check_pending_lookups: an attempt whose
// timeout passed is retried with a fresh id, or, when it was the last,
// the lookup ends as timed out.
func (r *Router) pollPending(now time.Time) {
	n := ms(now)
	timeouts := r.cfg.LookupAttemptTimeouts
	var retry, expire []identity.NodeAddr
	for _, t := range sortedKeys(r.pending) {
		p := r.pending[t]
		var to int64
		if i := max(p.attempt-1, 0); i < len(timeouts) {
			to = timeouts[i].Milliseconds()
		}
		if satSub(n, p.lastSent) < to {
			continue
		}
		if p.attempt >= len(timeouts) {
			expire = append(expire, t)
		} else {
			retry = append(retry, t)
		}
	}
	for _, t := range retry {
		p := r.pending[t]
		p.attempt++
		p.lastSent = n
		p.badProofs = 0
	}
	failures := make([]uint32, len(expire))
	for i, t := range expire {
		delete(r.pending, t)
		failures[i] = r.recordFailure(t, n)
	}
	for _, t := range retry {
		if r.initiate(t) > 0 {
			r.log.Debug("Discovery retry sent", "target_node", r.name(t), "attempt", r.pending[t].attempt)
		}
	}
	for i, t := range expire {
		r.stats.Lookup.RespTimedOut++
		r.emit(now, LookupEvent{Target: t, Outcome: LookupTimedOut, Failures: failures[i]})
	}
}

// purgeRecent drops request ids older than the dedup window. Ids arrive
// in time order, so only the front of recentOrder can be stale.
func (r *Router) purgeRecent(now int64) {
	expiry := r.cfg.LookupRecentExpiry.Milliseconds()
	i := 0
	for ; i < len(r.recentOrder); i++ {
		id := r.recentOrder[i]
		e, ok := r.recent[id]
		if ok && satSub(now, e.ts) <= expiry {
			break
		}
		if ok {
			r.dropRecent(id)
		}
	}
	r.recentOrder = r.recentOrder[i:]
}

// HandleLookupRequest processes a LookupRequest (msg starts with 0x30)
// from the peer from: drop a request id seen in the last
// LookupRecentExpiry (or when LookupMaxRecent ids are remembered and from
// holds at least as many as any peer; else the top holder's oldest makes
// room), else remember it with its sender; answer when we are the target
// and from's proof budget allows (budget.go); otherwise,
// with TTL left and the per-target forward limit passed, forward it with
// TTL−1 to the tree peers whose filter contains the target (the sender
// included), or failing those to the non-tree peers whose filter does.
func (r *Router) HandleLookupRequest(now time.Time, from identity.NodeAddr, msg []byte) error {
	L := &r.stats.Lookup
	L.ReqReceived++
	req, err := r.parseRequest(from, msg)
	if err != nil {
		L.ReqDecodeError++
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	n := ms(now)
	if req.Origin == r.self {
		// Our own request, come back (a peer forwards to every tree peer
		// whose filter holds the target, the sender included). Upstream
		// records it as if in transit, and the response, when it reaches
		// us, is then passed back towards that peer instead of answering
		// our lookup — which is lost. The originator never records its
		// own ids.
		L.ReqDuplicate++
		return fmt.Errorf("%w: our own lookup request %d", ErrDuplicate, req.RequestID)
	}
	r.purgeRecent(n)
	if e, ok := r.recent[req.RequestID]; ok {
		if satSub(n, e.ts) <= r.cfg.LookupRecentExpiry.Milliseconds() {
			L.ReqDuplicate++
			return fmt.Errorf("%w: id %d", ErrDuplicate, req.RequestID)
		}
		r.dropRecent(req.RequestID) // stale behind a newer id after a clock step
	}
	if len(r.recent) >= r.cfg.LookupMaxRecent && !r.makeRecentRoom(from) {
		L.ReqDedupCacheFull++
		return fmt.Errorf("%w: %d lookup request ids remembered", ErrLimit, len(r.recent))
	}
	r.addRecent(req.RequestID, from, n)

	switch {
	case req.Target == r.self:
		L.ReqTargetIsUs++
		if !r.takeProof(from, n) {
			return fmt.Errorf("%w: lookup proofs for %s", ErrRateLimited, from.Short())
		}
		return r.respond(n, req)
	case req.TTL == 0:
		L.ReqTTLExhausted++
		return fmt.Errorf("%w: lookup request %d", ErrTTLExhausted, req.RequestID)
	case r.cfg.Leaf:
		L.ReqLeafNotForwarded++
		return nil // next's Leaf forwards no lookups (it stays on the reverse path only for its own)
	case r.fwdLimiter.Take(msTime(n), req.Target) != ratelimit.Admitted:
		L.ReqForwardRateLimited++
		return fmt.Errorf("%w: lookup forward for %s", ErrRateLimited, req.Target.Short())
	}
	L.ReqForwarded++
	req.TTL--
	var tree, other []identity.NodeAddr
	for _, p := range r.links.Peers() {
		if p != req.Target && !r.transitPeer(p) {
			continue // next's NonRouting and Leaf peers carry no lookups but their own
		}
		if !r.meetsMTU(p, req.MinMTU) {
			continue
		}
		if !r.flt.MayReach(p, req.Target) {
			if p != from && r.fullTreeFilter(p) {
				tree = append(tree, p)
			}
			continue
		}
		if r.topo.IsTreePeer(p) {
			tree = append(tree, p)
		} else {
			other = append(other, p)
		}
	}
	to := tree
	if len(to) == 0 {
		if len(other) == 0 {
			L.ReqNoTreePeer++
			r.log.Log(context.Background(), logging.LevelTrace, "No eligible peers to forward LookupRequest",
				"request_id", req.RequestID)
			return fmt.Errorf("%w: %s", ErrNoPeers, req.Target.Short())
		}
		L.ReqFallbackForwarded++
		r.log.Debug("Forwarding LookupRequest via non-tree fallback", "request_id", req.RequestID,
			"target", r.name(req.Target), "ttl", req.TTL, "peer_count", len(other))
		to = other
	}
	r.fanOut(req, to)
	return nil
}

// respond answers a request for us: our current coordinates, signed with
// the request id and our address, sent back to the peer the request came
// from with our link MTU folded into path_mtu.
func (r *Router) respond(now int64, req wire.LookupRequest) error {
	resp := wire.LookupResponse{RequestID: req.RequestID, Target: r.self, PathMTU: math.MaxUint16, TargetCoords: r.myCoords()}
	sig, err := r.id.Sign(resp.ProofBytes(nil), r.rnd)
	if err != nil {
		return fmt.Errorf("%w: lookup proof: %w", ErrSign, err)
	}
	resp.Proof = sig[:]
	var next identity.NodeAddr
	if e, ok := r.recent[req.RequestID]; ok {
		next = e.from
	} else if p, _, ok := r.findNextHop(now, req.Origin); ok {
		next = p
	} else {
		r.stats.Lookup.RespNoRoute++
		return fmt.Errorf("%w: lookup response to %s", ErrNoRoute, req.Origin.Short())
	}
	resp.PathMTU = foldMTU(resp.PathMTU, r.links.LinkMTU(next))
	return r.sendResponse(next, resp)
}

func (r *Router) sendResponse(next identity.NodeAddr, resp wire.LookupResponse) error {
	var m interface {
		Len() int
		MarshalTo([]byte) (int, error)
	} = resp
	if r.linkIsNext(next) {
		m = wire.LookupResponseV1{LookupResponse: resp}
	}
	buf := r.scratch(m.Len())
	if _, err := m.MarshalTo(buf); err != nil {
		return fmt.Errorf("%w: %w", ErrSend, err)
	}
	if err := r.links.Send(next, false, buf); err != nil {
		return fmt.Errorf("%w: lookup response to %s: %w", ErrSend, next.Short(), err)
	}
	return nil
}

// HandleLookupResponse processes a LookupResponse (msg starts with 0x31)
// from the peer from. A response to a request we passed on goes back to
// the peer that request came from, once, with our link MTU folded into
// path_mtu. Any other response is treated as an answer to our own lookup:
// the proof is checked with the target's key from Identities, the
// coordinates are cached (with the path MTU when at least
// MinActionablePathMTU), the pending lookup ends, and OnLookup reports it.
// The proof is checked only within budget (budget.go): for a response to
// no pending lookup, from's proof budget; for a pending one, fewer than
// maxBadProofs failures this attempt.
func (r *Router) HandleLookupResponse(now time.Time, from identity.NodeAddr, msg []byte) error {
	L := &r.stats.Lookup
	L.RespReceived++
	resp, err := r.parseResponse(from, msg)
	if err != nil {
		L.RespDecodeError++
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if e, ok := r.recent[resp.RequestID]; ok {
		if e.forwarded {
			return fmt.Errorf("%w: id %d", ErrForwarded, resp.RequestID)
		}
		e.forwarded = true
		L.RespForwarded++
		resp.PathMTU = foldMTU(resp.PathMTU, r.links.LinkMTU(e.from))
		return r.sendResponse(e.from, resp)
	}

	pk, ok := r.ids.Lookup(resp.Target)
	if !ok {
		L.RespIdentityMiss++
		return fmt.Errorf("%w: %s", ErrUnknownTarget, resp.Target.Short())
	}
	n := ms(now)
	p, pending := r.pending[resp.Target]
	switch {
	case pending && p.badProofs >= maxBadProofs:
		r.stats.Limits.BadProofsLimited++
		return fmt.Errorf("%w: %d bad proofs for %s this attempt", ErrRateLimited, p.badProofs, resp.Target.Short())
	case !pending && !r.takeProof(from, n):
		return fmt.Errorf("%w: lookup proofs for %s", ErrRateLimited, from.Short())
	}
	if err := pk.Verify(resp.ProofBytes(r.scratch(0)), resp.Proof); err != nil {
		L.RespProofFailed++
		if pending {
			p.badProofs++
		}
		r.log.Warn("LookupResponse proof verification failed, discarding", "request_id", resp.RequestID, "target", r.name(resp.Target))
		return fmt.Errorf("%w: %s: %w", ErrProof, resp.Target.Short(), err)
	}
	L.RespAccepted++
	delete(r.backoff, resp.Target)
	delete(r.pending, resp.Target)
	coords := resp.TargetCoords.Addrs()
	mtu := resp.PathMTU
	if mtu < MinActionablePathMTU {
		r.stats.Errors.LookupRespMTUBelowFloor++
		r.log.Warn("lookup response path MTU below the actionable floor; caching coordinates without it",
			"request_id", resp.RequestID, "target", resp.Target, "path_mtu", mtu)
		mtu = 0
	}
	r.cache.insert(n, resp.Target, coords, mtu)
	r.log.Info("Discovery succeeded, proof verified, route cached", "request_id", resp.RequestID,
		"target", r.name(resp.Target), "depth", max(len(coords)-1, 0), "path_mtu", mtu)
	r.emit(now, LookupEvent{Target: resp.Target, Outcome: LookupFound, RequestID: resp.RequestID, Coords: coords, PathMTU: mtu})
	return nil
}
