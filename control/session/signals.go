package session

import (
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/wire"
)

// Routing signals: CoordsRequired, PathBroken and MtuExceeded, and the path-MTU clamps they set.

type verdict uint8

const (
	admit verdict = iota
	forged
	unbound
)

func (t *Table) signalVerdict(src, dest identity.NodeAddr) verdict {
	if dest == t.self || src == dest {
		return forged
	}
	if e := t.sessions[dest]; e != nil && (e.state == StateEstablished || e.initiator) {
		return admit
	}
	return unbound
}

func (t *Table) coordsResponseAllowed(now time.Time, dest identity.NodeAddr) bool {
	return t.coordsTx.Take(now, dest) == ratelimit.Admitted
}

func (t *Table) handleSignal(now time.Time, src, fromPeer identity.NodeAddr, fsp []byte) {
	typ, err := wire.ParseRoutingSignalType(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	var dest identity.NodeAddr
	var mtu uint16
	var reporter identity.NodeAddr
	switch typ {
	case wire.SignalCoordsRequired:
		t.stats.CoordsRequired++
		m, err := wire.ParseCoordsRequired(fsp)
		if err != nil {
			t.stats.Malformed++
			return
		}
		dest, reporter = m.DestAddr, m.Reporter
	case wire.SignalPathBroken:
		t.stats.PathBroken++
		m, err := wire.ParsePathBroken(fsp)
		if err != nil {
			t.stats.Malformed++
			return
		}
		dest, reporter = m.DestAddr, m.Reporter
	case wire.SignalMtuExceeded:
		t.stats.MtuExceeded++
		m, err := wire.ParseMtuExceeded(fsp)
		if err != nil {
			t.stats.Malformed++
			return
		}
		dest, mtu, reporter = m.DestAddr, m.MTU, m.Reporter
	}
	switch v := t.signalVerdict(src, dest); v {
	case forged, unbound:
		if v == forged {
			t.stats.SignalsForged++
		}
		t.stats.SignalsUnbound++
		t.stats.UnknownSession++
		switch typ { // upstream's error_signals.unbound_*, forged ones included
		case wire.SignalCoordsRequired:
			t.stats.UnboundCoords++
		case wire.SignalPathBroken:
			t.stats.UnboundBroken++
		case wire.SignalMtuExceeded:
			t.stats.UnboundMTU++
		}
		return
	}
	e := t.sessions[dest]
	// A signal's source and reporter are anyone's to claim: only one
	// from a node our datagrams to dest pass through may act on the path.
	// A genuine report names its sender as reporter (upstream and we
	// send both as the relay's own address).
	onPath := reporter == src && t.onPath(now, dest, reporter, fromPeer)
	switch typ {
	case wire.SignalCoordsRequired, wire.SignalPathBroken:
		if t.coordsResponseAllowed(now, dest) && e.state == StateEstablished {
			if err := t.sendCoordsWarmup(now, e); err != nil {
				t.log.Debug("CoordsWarmup response failed", "dest", dest, "err", err)
			} else {
				t.stats.CoordsWarmupResponses++
			}
		}
		// Off the path, a PathBroken is unverifiable: the coordinates and
		// the clamp stay, and the lookup below replaces the coordinates
		// if the path really broke (a relay off the tree path, reached
		// through a peer's bloom filter, is not recognised as on it).
		broken := typ == wire.SignalPathBroken && onPath
		if typ == wire.SignalPathBroken && !onPath {
			t.stats.PathBrokenOffPath++
		}
		if broken {
			t.env.InvalidateCoords(dest)
		}
		if _, ok := t.env.Identity(dest); ok {
			t.env.StartLookup(now, dest)
		}
		if broken {
			t.releaseClamp(now, dest)
		}
		e.warmup = t.cfg.CoordsWarmupPackets
	case wire.SignalMtuExceeded:
		if !onPath {
			// Ignored, not clamped: a relay off the tree path that
			// really dropped a packet is heard anyway, through the
			// remote's authenticated PathMtuNotification (session MMP)
			// on the next datagram it receives.
			t.stats.MtuExceededOffPath++
			t.log.Debug("MtuExceeded from a node not on the path; ignoring", "dest", t.name(dest),
				"src", src.String(), "reporter", reporter.String(), "bottleneck_mtu", mtu)
			return
		}
		if n, ok := t.env.NotifiedPathMTU(dest); ok && mtu < n {
			// Every relay folds its outgoing link MTU into the
			// path_mtu of the datagrams it forwards, and dest reported
			// the result in an authenticated PathMtuNotification: a
			// hop narrower than that is contradicted. Were the path to
			// have narrowed since, dest's next notification (at once, or
			// within its interval) lowers the session's MTU itself.
			t.stats.MtuExceededContradicted++
			t.log.Debug("MtuExceeded below the path MTU the destination reported; ignoring", "dest", t.name(dest),
				"reporter", reporter.String(), "bottleneck_mtu", mtu, "notified_mtu", n)
			return
		}
		if mtu < MinActionablePathMTU {
			t.stats.MtuExceededBelowFloor++
			t.log.Warn("MtuExceeded reports a path MTU below the actionable floor; ignoring", "dest", t.name(dest),
				"reporter", reporter.String(), "bottleneck_mtu", mtu, "floor", MinActionablePathMTU)
			return
		}
		if old := e.pathMTU; old == 0 || mtu < old {
			e.pathMTU = mtu
			// old_mtu 0: no path MTU was known for the session yet.
			t.log.Info("Path MTU decreased via reactive MtuExceeded signal", "dest", t.name(dest),
				"old_mtu", old, "new_mtu", mtu, "reporter", reporter.String())
		}
		if old, ok := t.clamp[dest]; !ok || mtu < old.mtu {
			t.clamp[dest] = clampEntry{mtu, now}
			t.up.Event(now, Event{Kind: EventPathMTU, Remote: dest, MTU: mtu})
		} else if mtu == old.mtu {
			t.clamp[dest] = clampEntry{mtu, now} // confirmed: its lifetime restarts
		}
	}
}

// clampEntry is a path-MTU clamp and when it was last set or confirmed.
type clampEntry struct {
	mtu uint16
	at  time.Time
}

// onPath reports whether reporter is plausibly on the path of our
// datagrams to dest: our next hop towards dest, its signal arriving
// over that very link (a relay that is our link peer sends to us
// directly), or on the tree path between us and dest (our ancestors and
// dest's, from its cached coordinates), which greedy tree routing
// follows.
func (t *Table) onPath(now time.Time, dest, reporter, fromPeer identity.NodeAddr) bool {
	if hop, ok := t.env.NextHop(now, dest); ok && hop == reporter {
		return fromPeer == reporter
	}
	if slices.Contains(t.env.Coords(), reporter) {
		return true
	}
	c, ok := t.env.CachedCoords(dest)
	return ok && slices.Contains(c, reporter)
}

// expireClamps releases the clamps not set or confirmed for
// ClampLifetime, so that the path is tried at full size again.
func (t *Table) expireClamps(now time.Time) {
	for dest, c := range t.clamp {
		if now.Sub(c.at) < ClampLifetime {
			continue
		}
		t.stats.ClampsExpired++
		if e := t.sessions[dest]; e != nil && e.pathMTU == c.mtu {
			e.pathMTU = 0 // the next datagram seeds it from the first hop
		}
		t.releaseClamp(now, dest)
	}
}

func (t *Table) releaseClamp(now time.Time, dest identity.NodeAddr) {
	if _, ok := t.clamp[dest]; ok {
		delete(t.clamp, dest)
		t.up.Event(now, Event{Kind: EventPathMTU, Remote: dest})
	}
}
