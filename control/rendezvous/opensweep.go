package rendezvous

import (
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// OpenSweepPull is how many cached adverts one open-discovery sweep looks
// at (upstream's cached_open_discovery_candidates(64)).
const OpenSweepPull = 64

// OpenRetryLifetimeMultiplier: an open-discovery retry expires after this
// many advert TTLs (upstream's OPEN_DISCOVERY_RETRY_LIFETIME_MULTIPLIER).
const OpenRetryLifetimeMultiplier = 2

// OpenSweepBudget is upstream's open_discovery_enqueue_budget: what is
// left of maxPending after the open-discovery retries already pending,
// and no more than the free handshake and peer slots. Pass a negative
// slot count for "unlimited".
func OpenSweepBudget(maxPending, openPending, handshakeSlots, peerSlots int) int {
	b := max(maxPending-openPending, 0)
	if handshakeSlots >= 0 {
		b = min(b, handshakeSlots)
	}
	if peerSlots >= 0 {
		b = min(b, peerSlots)
	}
	return b
}

// SweepView is what an open-discovery sweep asks of the node about one
// candidate peer.
type SweepView struct {
	// Configured: the npub is one of the node's configured peers. Such a
	// candidate is skipped; Expedite is called for it first.
	Configured func(identity.PublicKey) bool
	// Connected: a link to the peer is up.
	Connected func(identity.NodeAddr) bool
	// Pending: a retry to the peer is already queued (open or not).
	Pending func(identity.NodeAddr) bool
	// InCooldown: the peer's failure streak holds it in cooldown.
	InCooldown func(npub string) bool
	// Connecting: a handshake to the peer is in flight.
	Connecting func(identity.NodeAddr) bool
	// Expedite pulls a configured peer's pending retry forward to now,
	// when it is neither connected nor connecting (the node checks).
	Expedite func(identity.PublicKey)
}

// SweepPick is one peer an open-discovery sweep queues, due now.
type SweepPick struct {
	PublicKey identity.PublicKey
	// Endpoints are the advert's, duplicates removed, in advert order
	// (upstream's priorities 120, 121, … follow this order).
	Endpoints []Endpoint
}

// SweepTally counts one sweep's decisions (upstream's OverlaySweepTally
// plus the driver's cached and self counts), for the summary log line.
type SweepTally struct {
	Startup                                                             bool // the one-shot startup sweep, not a per-tick one
	BudgetZero                                                          bool // nothing could be queued: nothing was looked at
	Cached                                                              int  // candidates pulled from the cache
	Queued                                                              int
	SkippedAge, SkippedConfigured, SkippedSelf, SkippedInvalidNpub      int
	SkippedConnected, SkippedRetryPending, SkippedCooldown, SkippedConn int
	SkippedNoEndpoints                                                  int
}

// SkippedTotal is the sum of every skip.
func (t SweepTally) SkippedTotal() int {
	return t.SkippedAge + t.SkippedConfigured + t.SkippedSelf + t.SkippedInvalidNpub + t.SkippedConnected +
		t.SkippedRetryPending + t.SkippedCooldown + t.SkippedConn + t.SkippedNoEndpoints
}

// Caller is upstream's caller field: "startup" or "per-tick".
func (t SweepTally) Caller() string {
	if t.Startup {
		return "startup"
	}
	return "per-tick"
}

// LogArgs are the fields of upstream's "open-discovery sweep complete".
func (t SweepTally) LogArgs() []any {
	return []any{"caller", t.Caller(), "cached", t.Cached, "queued", t.Queued,
		"skipped_age", t.SkippedAge, "skipped_configured", t.SkippedConfigured, "skipped_self", t.SkippedSelf,
		"skipped_connected", t.SkippedConnected, "skipped_retry_pending", t.SkippedRetryPending,
		"skipped_connecting", t.SkippedConn, "skipped_no_endpoints", t.SkippedNoEndpoints,
		"skipped_invalid_npub", t.SkippedInvalidNpub, "skipped_cooldown", t.SkippedCooldown,
		"skipped_total", t.SkippedTotal()}
}

// ShouldLog is upstream's gate on the summary: always after the startup
// sweep, after a per-tick one only when it queued something. (A zero
// budget is logged apart, at debug.)
func (t SweepTally) ShouldLog() bool { return !t.BudgetZero && (t.Startup || t.Queued > 0) }

// PlanOpenSweep decides one open-discovery sweep over candidates (at most
// OpenSweepPull valid cached adverts, see Service.OpenCandidates), as
// upstream's reconciler layer_overlay_enqueue does. selfHex is our own
// key; maxAgeSecs is set for the startup sweep only. Each candidate is
// skipped, in this order, when: its advert is older than maxAgeSecs;
// it is a configured peer (whose pending retry is expedited); it is us;
// its key is invalid; it is connected; a retry to it is pending; it is in
// cooldown; a handshake to it is in flight; its advert has no endpoints.
// The others are queued until budget runs out (the remaining candidates
// are not looked at).
func PlanOpenSweep(nowMs uint64, maxAgeSecs *uint64, selfHex string, candidates []CachedAdvert, budget int, v SweepView) ([]SweepPick, SweepTally) {
	t := SweepTally{Startup: maxAgeSecs != nil, Cached: len(candidates)}
	if budget <= 0 {
		t.BudgetZero = true
		return nil, t
	}
	nowSecs := nowMs / 1000
	tooOld := func(c CachedAdvert) bool {
		return maxAgeSecs != nil && nowSecs > uint64(max(c.CreatedAt, 0)) && nowSecs-uint64(max(c.CreatedAt, 0)) > *maxAgeSecs
	}
	var picks []SweepPick
	for _, c := range candidates {
		if budget == 0 {
			break
		}
		pk, err := identity.ParsePublicKeyHex(c.AuthorHex)
		// Upstream's driver drops our own advert before the core sees it,
		// counting it where the old sweep's order put it (after the age
		// and configured checks).
		if err == nil && c.AuthorHex == selfHex {
			switch {
			case tooOld(c):
				t.SkippedAge++
			case v.Configured(pk):
				t.SkippedConfigured++
			default:
				t.SkippedSelf++
			}
			continue
		}
		if tooOld(c) {
			t.SkippedAge++
			continue
		}
		if err == nil && v.Configured(pk) {
			v.Expedite(pk)
			t.SkippedConfigured++
			continue
		}
		if err != nil {
			t.SkippedInvalidNpub++
			continue
		}
		na := pk.NodeAddr()
		switch {
		case v.Connected(na):
			t.SkippedConnected++
			continue
		case v.Pending(na):
			t.SkippedRetryPending++
			continue
		case v.InCooldown(pk.Npub()):
			t.SkippedCooldown++
			continue
		case v.Connecting(na):
			t.SkippedConn++
			continue
		}
		var eps []Endpoint
		for _, e := range c.Advert.Endpoints {
			if !slices.Contains(eps, e) {
				eps = append(eps, e)
			}
		}
		if len(eps) == 0 {
			t.SkippedNoEndpoints++
			continue
		}
		picks = append(picks, SweepPick{PublicKey: pk, Endpoints: eps})
		budget--
		t.Queued++
	}
	return picks, t
}

// StartupSweep is the one-shot open-discovery sweep's schedule: it runs
// once, on the first tick at least Delay after the service started, with
// adverts older than MaxAge skipped. Not safe for concurrent use.
type StartupSweep struct {
	Started time.Time
	Delay   time.Duration
	MaxAge  time.Duration
	done    bool
}

// Due reports whether the startup sweep runs now, and with what age bound
// in seconds; once it has said yes it says no for good.
func (s *StartupSweep) Due(now time.Time) (uint64, bool) {
	if s.done || now.Before(s.Started.Add(s.Delay)) {
		return 0, false
	}
	s.done = true
	return uint64(s.MaxAge / time.Second), true
}

// Done reports whether the startup sweep has run.
func (s *StartupSweep) Done() bool { return s.done }
