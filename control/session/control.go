package session

import (
	"fmt"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// Control: removal, queries and the snapshot the loop publishes.

// Remove drops dest's session and pending queue.
func (t *Table) Remove(now time.Time, dest identity.NodeAddr) {
	if _, ok := t.sessions[dest]; ok {
		t.drop(now, dest, "removed")
	}
}

// ResetWarmup re-arms the coordinate warmup of an established session
// (upstream does this on a LookupResponse for it).
func (t *Table) ResetWarmup(dest identity.NodeAddr) {
	if e := t.sessions[dest]; e != nil && e.state == StateEstablished {
		e.warmup = t.cfg.CoordsWarmupPackets
	}
}

// PathMTU returns the per-destination clamp learned from MtuExceeded.
func (t *Table) PathMTU(dest identity.NodeAddr) (uint16, bool) {
	m, ok := t.clamp[dest]
	return m.mtu, ok
}

// Info is one session's state, as show_sessions reports it.
type Info struct {
	RemoteAddr            identity.NodeAddr
	Remote                identity.PublicKey // responder awaiting msg3: our own key (upstream placeholder)
	State                 State
	Initiator             bool
	LastActivity          time.Time
	PacketsSent           uint64
	PacketsRecv           uint64
	BytesSent             uint64
	BytesRecv             uint64
	ResendCount           int
	SessionStart          time.Time
	KBit                  bool
	CoordsWarmupRemaining uint8
	Draining              bool
	RekeyInProgress       bool
	HasPending            bool
	PathMTU               uint16
	PendingPackets        int
	// PQ: the current epoch's keys are post-quantum (ML-KEM-768 derived);
	// PQMode the policy the session runs under.
	PQ     bool
	PQMode PQMode
	// Pattern is the session's Noise handshake pattern (XK: upstream
	// master; XX: upstream next).
	Pattern Pattern
}

func (t *Table) info(e *entry) Info {
	return Info{
		RemoteAddr: e.addr, Remote: e.remote, State: e.state, Initiator: e.initiator,
		LastActivity: e.hot.last(), PacketsSent: e.hot.pktsSent.Load(), PacketsRecv: e.hot.pktsRecv.Load(),
		BytesSent: e.hot.bytesSent.Load(), BytesRecv: e.hot.bytesRecv.Load(), ResendCount: e.resendCount,
		SessionStart: e.sessionStart, KBit: e.k, CoordsWarmupRemaining: e.warmup,
		Draining: !e.drainStarted.IsZero(), RekeyInProgress: e.rekeyInProgress(),
		HasPending: e.pending != nil, PathMTU: e.pathMTU, PendingPackets: len(t.pending[e.addr]),
		PQ: e.pq.cur, PQMode: e.pq.mode, Pattern: e.pattern,
	}
}

// RemoteKey is the key of dest's session remote, known once the session
// has authenticated it (not for a responder before msg3).
func (t *Table) RemoteKey(dest identity.NodeAddr) (identity.PublicKey, bool) {
	e := t.sessions[dest]
	if e == nil || e.remote.NodeAddr() != dest {
		return identity.PublicKey{}, false
	}
	return e.remote, true
}

// Session returns dest's session state.
func (t *Table) Session(dest identity.NodeAddr) (Info, bool) {
	e := t.sessions[dest]
	if e == nil {
		return Info{}, false
	}
	return t.info(e), true
}

// DropPending removes dest's queued packets unless a session to dest is
// established, calling fn for each in order (the node answers IPv6
// packets with Destination Unreachable when the lookup for dest failed). It returns how many it dropped.
func (t *Table) DropPending(dest identity.NodeAddr, fn func(srcPort, dstPort uint16, payload []byte)) int {
	if t.Established(dest) {
		return 0
	}
	q := t.pending[dest]
	delete(t.pending, dest)
	for _, p := range q {
		t.stats.PendingDropped++
		if fn != nil {
			fn(p.srcPort, p.dstPort, p.payload)
		}
	}
	return len(q)
}

// Established reports whether a session to dest is established.
func (t *Table) Established(dest identity.NodeAddr) bool {
	e := t.sessions[dest]
	return e != nil && e.state == StateEstablished
}

// Len is the number of sessions.
func (t *Table) Len() int { return len(t.sessions) }

// PQLen is the number of established sessions whose current keys are
// post-quantum.
func (t *Table) PQLen() int {
	n := 0
	for _, e := range t.sessions {
		if e.state == StateEstablished && e.pq.cur {
			n++
		}
	}
	return n
}

// PendingDestinations is the number of destinations with queued packets.
func (t *Table) PendingDestinations() int { return len(t.pending) }

// SnapshotStats is one show_sessions entry's "stats" object.
type SnapshotStats struct {
	PacketsSent uint64 `json:"packets_sent"`
	PacketsRecv uint64 `json:"packets_recv"`
	BytesSent   uint64 `json:"bytes_sent"`
	BytesRecv   uint64 `json:"bytes_recv"`
}

// SnapshotEntry is one element of show_sessions' "sessions" array, field
// for field as upstream's show_sessions except display_name (the node's
// naming) and the "mmp" object (MMP's); the node adds both.
type SnapshotEntry struct {
	RemoteAddr            string        `json:"remote_addr"`
	State                 string        `json:"state"`
	IsInitiator           bool          `json:"is_initiator"`
	LastActivityMs        int64         `json:"last_activity_ms"`
	Npub                  string        `json:"npub"`
	Stats                 SnapshotStats `json:"stats"`
	ResendCount           *int          `json:"resend_count,omitempty"`
	SessionStartMs        *int64        `json:"session_start_ms,omitempty"`
	CurrentKBit           *bool         `json:"current_k_bit,omitempty"`
	CoordsWarmupRemaining *uint8        `json:"coords_warmup_remaining,omitempty"`
	IsDraining            *bool         `json:"is_draining,omitempty"`
	// PostQuantum (ours): the session's current keys are derived from an
	// ML-KEM-768 exchange (issue 32); established sessions only.
	PostQuantum *bool `json:"post_quantum,omitempty"`
	// NoisePattern (ours): "XK" (upstream master's sessions) or "XX"
	// (upstream next's).
	NoisePattern string `json:"noise_pattern,omitempty"`
}

// Snapshot lists the sessions in NodeAddr order for show_sessions.
// Timestamps are Unix milliseconds, as upstream's now_ms().
func (t *Table) Snapshot() []SnapshotEntry {
	out := make([]SnapshotEntry, 0, len(t.sessions))
	for _, a := range t.sortedAddrs() {
		in := t.info(t.sessions[a])
		s := SnapshotEntry{
			RemoteAddr: fmt.Sprintf("%x", a[:]), State: in.State.String(), IsInitiator: in.Initiator,
			LastActivityMs: in.LastActivity.UnixMilli(), Npub: in.Remote.Npub(), NoisePattern: in.Pattern.String(),
			Stats: SnapshotStats{in.PacketsSent, in.PacketsRecv, in.BytesSent, in.BytesRecv},
		}
		if in.State != StateEstablished {
			rc := in.ResendCount
			s.ResendCount = &rc
		} else {
			ms, k, w, d := in.SessionStart.UnixMilli(), in.KBit, in.CoordsWarmupRemaining, in.Draining
			s.SessionStartMs, s.CurrentKBit, s.CoordsWarmupRemaining, s.IsDraining = &ms, &k, &w, &d
			pq := in.PQ
			s.PostQuantum = &pq
		}
		out = append(out, s)
	}
	return out
}

// Stats are the table's counters.
type Stats struct {
	Initiated, Established              uint64
	HandshakeResends, HandshakeTimeouts uint64
	IdlePurged                          uint64
	Malformed                           uint64
	UnknownSession, BadState            uint64
	SetupRateLimited, CrossingDropped   uint64
	AckHandshakeFailed, Msg3Failed      uint64
	// AckIdentityMismatch: XX SessionAcks under another key than the
	// one dialled (upstream next's counter).
	AckIdentityMismatch uint64
	// DualAcks (ours): SessionSetups answered with both an XK and an XX
	// SessionAck (PatternAuto, a remote of unknown line).
	DualAcks                              uint64
	AddrMismatch                          uint64
	DecryptFailed, UnknownMessageType     uint64
	RekeysInitiated, RekeyArmed, Cutovers uint64
	RekeyTiebreak, RekeyYielded           uint64
	RekeyPending, RekeyKeyMismatch        uint64
	RekeyExpired, PendingReplaced         uint64
	PendingDropped, PendingDestRefused    uint64
	CoordsRequired, PathBroken            uint64
	MtuExceeded, MtuExceededBelowFloor    uint64
	// MtuExceededOffPath and PathBrokenOffPath (ours): signals for a
	// bound session whose reporter is not its sender or not on the path
	// (next hop, our or the destination's tree ancestors). An off-path
	// MtuExceeded is ignored; an off-path PathBroken starts a lookup but
	// neither invalidates coordinates nor releases the clamp.
	MtuExceededOffPath, PathBrokenOffPath uint64
	// MtuExceededContradicted (ours): on-path MtuExceeded ignored for
	// reporting less than the path MTU the destination last reported
	// in an authenticated PathMtuNotification.
	MtuExceededContradicted uint64
	// ClampsExpired (ours): MtuExceeded clamps released after
	// ClampLifetime without confirmation.
	ClampsExpired                 uint64
	SignalsForged, SignalsUnbound uint64
	// UnboundCoords, UnboundBroken and UnboundMTU split SignalsUnbound by
	// signal type (CoordsRequired, PathBroken, MtuExceeded).
	UnboundCoords, UnboundBroken, UnboundMTU uint64
	CoordsWarmupResponses                    uint64
	PathMtuNotifBelowFloor                   uint64
	// OpenedForGone: messages a dataplane worker decrypted for a session
	// the loop no longer had established when it saw them.
	OpenedForGone uint64
	// SetupSuperseded (ours): answered handshakes replaced by a
	// SessionSetup with another msg1 from the same claimed source, before
	// their msg3. ResponderSuperseded (ours): answered handshakes
	// replaced by our own SessionSetup because traffic waited past a
	// resend interval with no msg3. A spoofed setup cannot hold a source's
	// sessions off either way.
	SetupSuperseded, ResponderSuperseded uint64
	// RespondersEvicted (ours): answered handshakes dropped, oldest
	// first, to hold at most MaxPendingResponders.
	RespondersEvicted uint64
	// SessionsEvicted (ours): sessions dropped, least proven first, to
	// hold at most MaxSessions. SessionsRefused (ours): SessionSetups
	// refused because the table held only proven sessions.
	SessionsEvicted, SessionsRefused uint64

	// Post-quantum upgrade (ours, issue 32). PQOffered: exchanges offered
	// (PQOfferResends: offers sent again); PQAccepted: offers answered;
	// PQUpgrades: epochs cut over to ML-KEM-derived keys; PQFallbacks:
	// sessions left classical under pq preferred; PQRefused: sessions torn
	// down under pq required; PQConfirmFailed: key confirmations that did
	// not verify; PQMessagesRefused: offers, accepts and confirms refused
	// (replayed, out of epoch, unexpected, invalid key); PQFragmentsRefused:
	// malformed fragments and fragments conflicting with a reassembly;
	// PQClassicDropped: data packets refused on a classical epoch under pq
	// required.
	PQOffered, PQOfferResends, PQAccepted, PQUpgrades uint64
	PQFallbacks, PQRefused, PQConfirmFailed           uint64
	PQMessagesRefused, PQFragmentsRefused             uint64
	PQClassicDropped                                  uint64
}

// Stats returns a copy of the counters.
func (t *Table) Stats() Stats { return t.stats }
