package session

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ratelimit"
)

// Bucket classes of a link peer's setup limiter: setups that would open a
// session, and setups naming an established session.
const (
	strangerSetups = iota
	establishedSetups
)

// setupLimiter is upstream's SessionSetupRateLimiter, keyed by the link
// peer the setup arrived from: two buckets per link peer, forgotten once
// the link peer has sent no setup for SetupBucketIdle (checked at each
// admitted setup). Unbounded, as upstream's.
type setupLimiter struct {
	links *ratelimit.Keyed[identity.NodeAddr]
}

func newSetupLimiter(cfg Config) setupLimiter {
	return setupLimiter{links: ratelimit.NewKeyed[identity.NodeAddr](ratelimit.KeyedConfig{
		Rates: []ratelimit.Rate{
			strangerSetups:    ratelimit.PerSecond(float64(cfg.SetupBurst), cfg.SetupRate),
			establishedSetups: ratelimit.PerSecond(float64(cfg.EstablishedSetupBurst), cfg.EstablishedSetupRate),
		},
		Forget:         ratelimit.Idle,
		IdleAfter:      cfg.SetupBucketIdle,
		TouchOnRefusal: true,
		SweepOnAdmit:   true,
	})}
}

func (l *setupLimiter) admit(now time.Time, linkPeer identity.NodeAddr, established bool) bool {
	class := strangerSetups
	if established {
		class = establishedSetups
	}
	return l.links.TakeClass(now, linkPeer, class) == ratelimit.Admitted
}
