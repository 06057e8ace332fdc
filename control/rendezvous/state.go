package rendezvous

import (
	"sort"
	"sync"
)

// ReplayCache remembers traversal session ids for the replay window,
// at most max of them (the soonest to expire, that is the oldest
// received, evicted first: every id lives one window from receipt).
type ReplayCache struct {
	mu       sync.Mutex
	max      int
	windowMs uint64
	seen     map[string]uint64 // session id → expiry ms
	// Evicted counts ids dropped for room; Replays duplicates refused.
	Evicted, Replays uint64
}

// NewReplayCache makes a cache keeping ids for windowMs.
func NewReplayCache(limit int, windowMs uint64) *ReplayCache {
	return &ReplayCache{max: max(limit, 1), windowMs: windowMs, seen: map[string]uint64{}}
}

// Check records id, or reports false when it was already seen and has not
// expired.
func (r *ReplayCache) Check(id string, nowMs uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, exp := range r.seen {
		if exp <= nowMs {
			delete(r.seen, k)
		}
	}
	if exp, ok := r.seen[id]; ok && exp > nowMs {
		r.Replays++
		return false
	}
	r.seen[id] = satAdd(nowMs, r.windowMs)
	if over := len(r.seen) - r.max; over > 0 {
		type kv struct {
			k string
			v uint64
		}
		all := make([]kv, 0, len(r.seen))
		for k, v := range r.seen {
			if k != id {
				all = append(all, kv{k, v})
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
		for _, e := range all[:min(over, len(all))] {
			delete(r.seen, e.k)
			r.Evicted++
		}
	}
	return true
}

// Len is how many ids are held.
func (r *ReplayCache) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// Admission bounds the offers being answered at once: globally and per
// sender npub (upstream's offer_admission). Release each permit taken.
type Admission struct {
	mu              sync.Mutex
	global, perNpub int
	inUse           int
	byNpub          map[string]int
	// RefusedGlobal and RefusedNpub count offers dropped at each gate.
	RefusedGlobal, RefusedNpub uint64
}

// NewAdmission makes the semaphores.
func NewAdmission(global, perNpub int) *Admission {
	return &Admission{global: max(global, 1), perNpub: max(perNpub, 1), byNpub: map[string]int{}}
}

// Gate names which limit refused an offer.
type Gate int

// Gates.
const (
	Admitted Gate = iota
	PerNpubFull
	GlobalFull
)

// TryAcquire takes a permit for sender: the per-npub one first, then the
// global one, as upstream.
func (a *Admission) TryAcquire(sender string) Gate {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byNpub[sender] >= a.perNpub {
		a.RefusedNpub++
		return PerNpubFull
	}
	if a.inUse >= a.global {
		a.RefusedGlobal++
		return GlobalFull
	}
	a.byNpub[sender]++
	a.inUse++
	return Admitted
}

// Release returns sender's permit; idle senders are forgotten.
func (a *Admission) Release(sender string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byNpub[sender] > 0 {
		a.inUse--
		if a.byNpub[sender]--; a.byNpub[sender] == 0 {
			delete(a.byNpub, sender)
		}
	}
}

// InUse is how many permits are held.
func (a *Admission) InUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inUse
}

// FailurePolicy is the failure state's configuration.
type FailurePolicy struct {
	StreakThreshold    uint32
	CooldownMs         uint64
	WarnIntervalMs     uint64
	MaxEntries         int
	MismatchCooldownMs uint64
}

// PeerFailure is one npub's traversal failure state.
type PeerFailure struct {
	ConsecutiveFailures uint32
	CooldownUntilMs     uint64 // 0: none
	LastFailureMs       uint64
	LastWarnMs          uint64
	SkewMs              int64
	HasSkew             bool
}

// FailureDecision is what record_failure tells the caller.
type FailureDecision struct {
	ConsecutiveFailures uint32
	ShouldWarn          bool
	CooldownUntilMs     uint64 // 0: none
	CrossedThreshold    bool
}

// FailureState is upstream's failure_state: per-npub failure streaks and
// cooldowns, bounded (the oldest last failure evicted).
type FailureState struct {
	mu      sync.Mutex
	pol     FailurePolicy
	entries map[string]*PeerFailure
	Evicted uint64
}

// NewFailureState makes an empty failure map.
func NewFailureState(p FailurePolicy) *FailureState {
	p.MaxEntries = max(p.MaxEntries, 1)
	return &FailureState{pol: p, entries: map[string]*PeerFailure{}}
}

func (f *FailureState) entry(npub string, nowMs uint64) *PeerFailure {
	e := f.entries[npub]
	if e != nil {
		return e
	}
	if len(f.entries) >= f.pol.MaxEntries {
		var oldest string
		var at uint64 = ^uint64(0)
		for k, v := range f.entries {
			if v.LastFailureMs < at || (v.LastFailureMs == at && k < oldest) {
				oldest, at = k, v.LastFailureMs
			}
		}
		delete(f.entries, oldest)
		f.Evicted++
	}
	e = &PeerFailure{}
	f.entries[npub] = e
	return e
}

// RecordFailure counts one failed attempt.
func (f *FailureState) RecordFailure(npub string, nowMs uint64) FailureDecision {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entry(npub, nowMs)
	e.ConsecutiveFailures++
	e.LastFailureMs = nowMs
	d := FailureDecision{ConsecutiveFailures: e.ConsecutiveFailures}
	if e.LastWarnMs == 0 || nowMs-e.LastWarnMs >= f.pol.WarnIntervalMs {
		d.ShouldWarn = true
		e.LastWarnMs = nowMs
	}
	if e.ConsecutiveFailures >= f.pol.StreakThreshold {
		e.CooldownUntilMs = satAdd(nowMs, f.pol.CooldownMs)
		d.CrossedThreshold = e.ConsecutiveFailures == f.pol.StreakThreshold
	}
	d.CooldownUntilMs = e.CooldownUntilMs
	return d
}

// RecordProtocolMismatch puts npub in the long cooldown; it reports
// whether to warn (no comparable cooldown was running).
func (f *FailureState) RecordProtocolMismatch(npub string, nowMs uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entry(npub, nowMs)
	until := satAdd(nowMs, f.pol.MismatchCooldownMs)
	warn := e.CooldownUntilMs+f.pol.CooldownMs < until
	e.ConsecutiveFailures = max(e.ConsecutiveFailures, f.pol.StreakThreshold)
	e.CooldownUntilMs = max(e.CooldownUntilMs, until)
	e.LastFailureMs = nowMs
	return warn
}

// MismatchCooldownSecs is how long RecordProtocolMismatch holds a peer
// in cooldown, in seconds (protocol_mismatch_cooldown_secs).
func (f *FailureState) MismatchCooldownSecs() uint64 { return f.pol.MismatchCooldownMs / 1000 }

// RecordSuccess clears npub's streak and cooldown.
func (f *FailureState) RecordSuccess(npub string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.entries[npub]; e != nil {
		e.ConsecutiveFailures, e.CooldownUntilMs = 0, 0
	}
}

// Reset forgets npub's streak (a refreshed or evicted advert).
func (f *FailureState) Reset(npub string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.entries, npub)
}

// NoteSkew stores the last clock-skew estimate for npub.
func (f *FailureState) NoteSkew(npub string, skewMs int64, nowMs uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entry(npub, nowMs)
	e.SkewMs, e.HasSkew = skewMs, true
}

// InCooldown reports whether npub is suppressed at nowMs, and until when.
func (f *FailureState) InCooldown(npub string, nowMs uint64) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.entries[npub]; e != nil && e.CooldownUntilMs > nowMs {
		return e.CooldownUntilMs, true
	}
	return 0, false
}

// Get is npub's state, if any.
func (f *FailureState) Get(npub string, nowMs uint64) (PeerFailure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[npub]
	if e == nil {
		return PeerFailure{}, false
	}
	v := *e
	if v.CooldownUntilMs <= nowMs {
		v.CooldownUntilMs = 0
	}
	return v, true
}

// Initiators allows at most one in-flight initiator per npub.
type Initiators struct {
	mu     sync.Mutex
	active map[string]bool
}

// Begin claims npub; false when an initiator to it is in flight.
func (in *Initiators) Begin(npub string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.active == nil {
		in.active = map[string]bool{}
	}
	if in.active[npub] {
		return false
	}
	in.active[npub] = true
	return true
}

// End releases npub.
func (in *Initiators) End(npub string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.active, npub)
}

// Active reports an initiator to npub in flight.
func (in *Initiators) Active(npub string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.active[npub]
}

// ElectionSkipsAnswer is the dual-initiator election: when we are initiating to
// the offer's sender ourselves and our NodeAddr is the smaller, we do not
// answer (their initiator times out, ours wins).
func ElectionSkipsAnswer(initiating bool, ours, theirs [16]byte) bool {
	if !initiating {
		return false
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			return ours[i] < theirs[i]
		}
	}
	return false
}
