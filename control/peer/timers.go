package peer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/wire"
)

// AddStatic registers a configured peer and dials it at once.
func (m *Manager) AddStatic(now time.Time, sp StaticPeer) {
	na := sp.PublicKey.NodeAddr()
	st := &staticState{cfg: sp, nodeAddr: na}
	if old := m.static[na]; old != nil {
		m.overrides[old.cfg.WireFormat]--
	}
	if sp.WireFormat > WireAuto {
		sp.WireFormat, st.cfg.WireFormat = WireDefault, WireDefault
	}
	m.overrides[sp.WireFormat]++
	m.static[na] = st
	m.dialStatic(now, st)
}

// StaticPeers calls f for each configured peer.
func (m *Manager) StaticPeers(f func(StaticPeer)) {
	for _, st := range m.static {
		f(st.cfg)
	}
}

func (m *Manager) dialStatic(now time.Time, st *staticState) {
	if len(st.cfg.Targets) > 0 {
		r, ok := m.env.(StaticResolver)
		if !ok {
			st.lastErr = errNoResolver
			m.log.Warn("cannot resolve configured peer addresses", "peer", st.nodeAddr.Short(), "alias", st.cfg.Alias, "error", st.lastErr)
			return
		}
		if st.resolving {
			return
		}
		st.resolving = true
		if res, done := r.ResolveStatic(st.nodeAddr, st.cfg.Targets); done {
			m.staticResolved(now, st, res)
		}
		return
	}
	m.dialCandidates(now, st, st.cfg.Addresses, nil)
}

var errNoResolver = errors.New("no resolver for configured addresses")

var errNoUsableAddress = errors.New("no usable address")

// StaticResolved delivers a resolution ResolveStatic answered later, and
// dials (or schedules the retry) as the answer allows.
func (m *Manager) StaticResolved(now time.Time, na identity.NodeAddr, res Resolution) {
	if st := m.static[na]; st != nil && st.resolving {
		m.staticResolved(now, st, res)
	}
}

func (m *Manager) staticResolved(now time.Time, st *staticState, res Resolution) {
	st.resolving = false
	if _, active := m.peers[st.nodeAddr]; active {
		return // it dialled us meanwhile
	}
	m.dialCandidates(now, st, res.Candidates, res.Err)
}

// dialCandidates dials the next of cands (they rotate across attempts);
// with none, or when the dial fails, the attempt counts as failed and the
// retry is scheduled on the usual backoff.
func (m *Manager) dialCandidates(now time.Time, st *staticState, cands []Candidate, resolveErr error) {
	if len(cands) == 0 {
		if resolveErr == nil && len(st.cfg.Targets) == 0 {
			return // nothing configured to dial: nothing to retry
		}
		st.lastErr = resolveErr
		why := errNoUsableAddress
		if resolveErr != nil {
			why = fmt.Errorf("%w: %w", errNoUsableAddress, resolveErr)
		}
		m.initiationFailed(st, why)
		m.scheduleRetry(now, st.nodeAddr, true)
		return
	}
	if resolveErr != nil {
		m.log.Debug("some configured peer addresses did not resolve", "peer", st.nodeAddr.Short(), "error", resolveErr)
	}
	c := cands[st.candidate%len(cands)]
	st.candidate++
	st.lastAddr, st.lastErr = c.Addr.String(), nil
	if err := m.Dial(now, st.cfg.PublicKey, c); err != nil {
		st.lastErr = err
		m.initiationFailed(st, err)
		m.scheduleRetry(now, st.nodeAddr, true)
	}
}

// initiationFailed is upstream's WARN for a configured peer that could
// not be dialled: "Failed to initiate peer connection" (npub, alias as
// Rust's Option debug form) on the first attempt, "Retry connection
// initiation failed" (peer) on a retry.
func (m *Manager) initiationFailed(st *staticState, err error) {
	if st.retries > 0 {
		logging.WithTarget(m.log, "fips::node::peering::driver").Warn("Retry connection initiation failed",
			"peer", m.name(st.nodeAddr), "error", err)
		return
	}
	alias := "None"
	if st.cfg.Alias != "" {
		alias = fmt.Sprintf("Some(%q)", st.cfg.Alias)
	}
	logging.WithTarget(m.log, "fips::node::lifecycle").Warn("Failed to initiate peer connection",
		"npub", st.cfg.PublicKey.Npub(), "alias", alias, "error", err)
}

// RetryInfo is one configured peer's retry state (show_routing.retries).
type RetryInfo struct {
	NodeAddr      identity.NodeAddr
	Alias         string
	Retries       int
	NextDial      time.Time
	AutoReconnect bool
	// Addr is the address last dialled (a host name's resolved address),
	// Err why the last attempt could not dial; "" and nil when unknown.
	Addr string
	Err  error
}

// Retries calls f for each configured peer with a retry scheduled, in
// node-address order.
func (m *Manager) Retries(f func(RetryInfo)) {
	for _, st := range sortedValues(m.static, func(a, b *staticState) int { return a.nodeAddr.Compare(b.nodeAddr) }) {
		if !st.pending {
			continue
		}
		if _, active := m.peers[st.nodeAddr]; active {
			continue
		}
		f(RetryInfo{NodeAddr: st.nodeAddr, Alias: st.cfg.Alias, Retries: st.retries, NextDial: st.nextDial,
			AutoReconnect: st.cfg.AutoReconnect, Addr: st.lastAddr, Err: st.lastErr})
	}
}

// scheduleRetry plans the next dial of a configured peer:
// min(base·2^count, cap). A handshake timeout starts the count at 1, a lost
// link at 0; an entry that already exists keeps counting up.
func (m *Manager) scheduleRetry(now time.Time, na identity.NodeAddr, handshakeFailed bool) {
	st := m.static[na]
	if st == nil || (!st.cfg.AutoReconnect && st.retries >= m.cfg.RetryMaxRetries) {
		return
	}
	if _, active := m.peers[na]; active {
		return
	}
	switch {
	case st.pending:
		st.retries++
	case handshakeFailed:
		st.retries = 1
	default:
		st.retries = 0
	}
	st.pending = true
	d := retryDelay(m.cfg.RetryBase, m.cfg.RetryMax, st.retries)
	st.nextDial = now.Add(d)
	m.log.Debug("reconnect scheduled", "peer", na.Short(), "in", d, "attempt", st.retries)
}

// retryDelay is base doubled per retry, capped at max. The doubling is
// checked before it is done, so no base or retry count overflows into a
// short (or negative) delay.
func retryDelay(base, max time.Duration, retries int) time.Duration {
	if base <= 0 || retries < 0 || retries > 62 || base > max>>retries {
		return max
	}
	return base << retries
}

// NextRetry reports when a configured peer will next be dialed (zero when
// none is scheduled).
func (m *Manager) NextRetry(na identity.NodeAddr) time.Time {
	if st := m.static[na]; st != nil && st.pending {
		return st.nextDial
	}
	return time.Time{}
}

// Tick runs every timer: handshake resends and timeouts, drains, dead-link
// detection, heartbeats, rekey triggers, reconnects, ACL reloads. The node
// calls it once per node.tick_interval_secs; calling it more often is
// harmless.
func (m *Manager) Tick(now time.Time) {
	if m.acl != nil {
		m.acl.Reload(m.log)
	}
	// Iterate in a fixed order: the in-process harness must replay a seed
	// exactly, and map order is random.
	for _, l := range sortedValues(m.legs, func(a, b *leg) int { return cmp.Compare(a.linkID, b.linkID) }) {
		switch {
		case l.rekeyOf == nil && !now.Before(l.nextResend) &&
			(m.peers[l.expectAddr] != nil || (l.anonymous && m.byAddr[addrKey{l.t, l.addr}] != nil)):
			// The peer came up over another link (it dialed us first).
			// The crossing msg2 had a resend interval to arrive; the
			// other side ignores further msg1s, so stop sending them.
			m.dropLeg(l)
			m.stats.HandshakesSuperseded++
		case now.Sub(l.started) >= m.cfg.HandshakeTimeout:
			m.dropLeg(l)
			m.stats.HandshakeTimeouts++
			if l.rekeyOf != nil {
				m.stats.RekeysAbandoned++
				m.log.Debug("rekey abandoned: no msg2", "peer", l.rekeyOf.String())
			} else if l.anonymous {
				m.log.Debug("Anonymous handshake timed out", "link_id", l.linkID, "remote_addr", l.addr.String())
			} else {
				m.log.Debug("Handshake connection timed out", "link_id", l.linkID, "peer", m.name(l.expectAddr),
					"remote_addr", l.addr.String())
				m.scheduleRetry(now, l.expectAddr, true)
			}
		case l.resends < m.cfg.HandshakeMaxResends && !now.Before(l.nextResend):
			l.resends++
			l.lastSent = now
			m.stats.HandshakeResends++
			m.send(l.t, l.addr, l.nextMsg1())
			gap := float64(m.cfg.HandshakeResendInterval) * math.Pow(m.cfg.HandshakeResendBackoff, float64(l.resends))
			l.nextResend = now.Add(time.Duration(gap))
		}
	}
	m.expireUnproven(now)
	m.expirePendingV1(now)
	for _, p := range sortedValues(m.peers, func(a, b *Peer) int { return a.NodeAddr.Compare(b.NodeAddr) }) {
		if p.prev != nil && !now.Before(p.prevDrainUntil) {
			m.delIndex(linkKey{p.Transport, p.prev.ourIndex})
			p.prev = nil
		}
		// Dead after link_dead_timeout of silence, unless a rekey msg1
		// still has resends left (it may be what revives the link).
		if now.Sub(p.LastRecv()) >= m.cfg.LinkDeadTimeout &&
			(p.rekey == nil || p.rekey.resends >= m.cfg.HandshakeMaxResends) {
			m.stats.LinksDead++
			m.removePeer(now, p, "link dead: nothing received for "+now.Sub(p.LastRecv()).Truncate(time.Second).String(), true)
			continue
		}
		if now.Sub(p.lastHB) >= m.cfg.HeartbeatInterval {
			p.lastHB = now
			hb := [1]byte{byte(wire.MsgHeartbeat)}
			if m.SendLink(now, p, 0, hb[:]) == nil {
				m.stats.HeartbeatsSent++
			}
		}
		if !m.pqTick(now, p) {
			continue
		}
		m.resendRekeyMsg3(now, p)
		m.sendReports(now, p)
		m.logMetrics(now, p)
		m.maybeRekey(now, p)
	}
	budget := m.cfg.RetryDialsPerTick
	for _, st := range sortedValues(m.static, func(a, b *staticState) int { return a.nodeAddr.Compare(b.nodeAddr) }) {
		if budget <= 0 {
			break
		}
		if st.pending && !now.Before(st.nextDial) {
			if _, active := m.peers[st.nodeAddr]; active {
				st.pending = false
				continue
			}
			budget--
			// The entry stays (the next failure counts up from it); the
			// handshake's own timeout reschedules it.
			st.nextDial = now.Add(m.cfg.HandshakeTimeout + m.cfg.RetryMax)
			m.dialStatic(now, st)
		}
	}
}

func (m *Manager) maybeRekey(now time.Time, p *Peer) {
	// Unproven rekeys of the peer's do not hold ours back: one may be a
	// replay. A genuine one proves itself within a frame or two.
	if !m.cfg.RekeyEnabled || p.rekey != nil || now.Before(p.dampenUntil) || m.pqBusy(p) {
		return
	}
	if now.Before(p.cur.rekeyAt) && p.cur.s.Send().Nonce() < m.cfg.RekeyAfterMessages {
		return
	}
	f := WireV0
	if p.v1 {
		// XX, the msg3 naming the session it replaces (REKEY_OF). Only
		// the smaller NodeAddr of a v1 link starts rekeys: the other
		// side's identity is known only at msg3, too late to settle
		// crossed rekeys before both cut over, so fips-go avoids them;
		// next's tie-break (the smaller wins) agrees with this.
		if !m.id.NodeAddr().Less(p.NodeAddr) {
			return
		}
		f = WireV1
	}
	l, err := m.newLeg(now, p.PublicKey, p.Transport, p.Addr, p, f)
	if err != nil {
		m.log.Warn("cannot start rekey", "peer", p.String(), "error", err)
		return
	}
	p.rekey = l
	m.stats.RekeysInitiated++
	m.log.Debug("rekey: sending msg1", "peer", p.String())
	m.send(l.t, l.addr, l.nextMsg1())
}

func sortedValues[K comparable, V any](m map[K]V, cmp func(a, b V) int) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, cmp)
	return out
}

// sendReports sends the MMP reports that are due to p.
func (m *Manager) sendReports(now time.Time, p *Peer) {
	sr, rr := p.mmp.Due(now)
	var buf [wire.ReceiverReportSize]byte
	if sr {
		if n, err := buildSenderReport(now, p, buf[:]); err == nil && n > 0 {
			m.sendReport(now, p, buf[:n])
		}
	}
	if rr {
		if n, err := buildReceiverReport(now, p, buf[:]); err == nil && n > 0 {
			m.sendReport(now, p, buf[:n])
		}
	}
}

func (m *Manager) sendReport(now time.Time, p *Peer, msg []byte) {
	if err := m.SendLink(now, p, 0, msg); err != nil {
		p.mmp.RecordSendFailure()
		return
	}
	p.mmp.RecordSendSuccess()
	m.stats.ReportsSent++
}

// logMetrics writes the periodic MMP line for p (node.mmp.log_interval_secs).
func (m *Manager) logMetrics(now time.Time, p *Peer) {
	if !p.mmp.LogDue(now) {
		return
	}
	p.mmp.MarkLogged(now)
	m.mmpLog.Debug("MMP link metrics", append([]any{"peer", m.name(p.NodeAddr)}, attrsAny(p.mmp.LinkLogAttrs())...)...)
}

// IsStatic reports whether na is a configured peer.
func (m *Manager) IsStatic(na identity.NodeAddr) bool { return m.static[na] != nil }

// ExpediteRetry pulls a configured peer's scheduled retry forward to now
// (the open-discovery sweep does so when the peer's advert is seen). It
// reports whether there was a later retry to pull forward.
func (m *Manager) ExpediteRetry(now time.Time, na identity.NodeAddr) bool {
	st := m.static[na]
	if st == nil || !st.pending || !st.nextDial.After(now) {
		return false
	}
	st.nextDial = now
	return true
}
