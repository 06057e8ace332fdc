package session

import (
	"crypto/hmac"
	"crypto/mlkem"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/pq"
	"github.com/fips-go/fips/control/wire"
)

// The post-quantum upgrade of sessions (ours, not upstream's; see
// pqkdf.go for the key schedule and docs/wire.md for the messages).
//
// Every classical epoch (the XK handshake's, and each XK rekey's) of a
// session whose policy is not off is upgraded: the side that sent the
// epoch's msg1 offers a fresh ML-KEM-768 encapsulation key in SessionMsgPQ
// fragments sealed under that epoch, the other encapsulates and answers, and both
// install the derived keys as the pending epoch. The offerer cuts over as
// soon as the accept's key confirmation verifies and sends a confirm on the
// new keys (resent, as a rekey's msg3, until the answerer is seen on them);
// the answerer cuts over on the first frame that authenticates under them,
// as for any rekey. Upstream drops unknown session message types, so a
// classic peer never answers: after PQTimeout the session is recorded
// classical (preferred) or torn down (required).

// pqState is one session's upgrade state.
type pqState struct {
	mode    PQMode
	cur     bool // the current epoch's keys are post-quantum
	pend    bool // the pending epoch's keys are post-quantum
	prev    bool // the previous (draining) epoch's keys are post-quantum
	classic bool // recorded classical for this session (preferred)
	// deadline: the current classical epoch must be upgraded by then
	// (zero: nothing awaited).
	deadline time.Time
	// epoch is the classical epoch the exchange runs in: offers and
	// accepts sealed under any other are refused.
	epoch *noise.Session
	id    [wire.PQIDSize]byte

	// offerer
	dk         *mlkem.DecapsulationKey768
	offering   bool
	nextResend time.Time
	resends    int

	// answerer
	answered bool
	accept   []byte // the accept payload, sent again for a resent offer

	keys PQKeys
	th   [32]byte
	rx   pq.Reassembly
	// confirming: the offerer's confirm is due again (as a rekey's msg3,
	// in msg3Payload's resend slot) until the answerer is seen on the
	// new keys; each resend is sealed afresh, never a replay.
	confirming bool
}

func (p *pqState) resetExchange() {
	p.epoch, p.dk, p.offering, p.answered, p.accept = nil, nil, false, false, nil
	p.nextResend, p.resends = time.Time{}, 0
	p.keys, p.th, p.id = PQKeys{}, [32]byte{}, [wire.PQIDSize]byte{}
	p.rx.Reset()
}

// PQMode is the policy for dest: its peers[].pq, else node.session.pq.
func (t *Table) PQMode(dest identity.NodeAddr) PQMode {
	if t.cfg.PQPeers != nil {
		if m, ok := (*t.cfg.PQPeers)[dest]; ok {
			return m
		}
	}
	return t.cfg.PQ
}

// pqHold: no payload may travel on e's current epoch (pq required and
// the epoch is classical).
func (t *Table) pqHold(e *entry) bool { return e.pq.mode == PQRequired && !e.pq.cur }

// pqRefuseData: a data packet that authenticated under slot hit (after
// any promotion it caused) came on a classical epoch under pq required.
func (t *Table) pqRefuseData(e *entry, hit slot) bool {
	if e.pq.mode != PQRequired {
		return false
	}
	if hit == slotPrevious {
		return !e.pq.prev
	}
	return !e.pq.cur
}

// pqEpochStart runs when e's current epoch became a classical one.
func (t *Table) pqEpochStart(now time.Time, e *entry) {
	p := &e.pq
	p.mode = t.PQMode(e.addr)
	p.resetExchange()
	p.cur, p.deadline = false, time.Time{}
	if p.mode == PQOff {
		return
	}
	p.epoch = e.cur
	if p.classic {
		// Recorded classical: neither offer nor wait again, but answer
		// an offer (a peer that offers can upgrade after all).
		return
	}
	// The side that sent this epoch's msg1 offers: the session's
	// initiator for the first epoch, the rekey's for a rekey (which may
	// be the other side, or a restarted peer re-establishing).
	if e.cur.Role() != noise.Initiator {
		// The answerer waits for the offer, its accept's round trip and
		// the offerer's confirm: twice the offerer's wait.
		p.deadline = now.Add(2 * t.cfg.PQTimeout)
		return
	}
	p.deadline = now.Add(t.cfg.PQTimeout)
	var seed [mlkem.SeedSize]byte
	if _, err := io.ReadFull(t.rnd, seed[:]); err != nil {
		t.pqGiveUp(now, e, "no randomness for the ML-KEM key")
		return
	}
	dk, err := mlkem.NewDecapsulationKey768(seed[:])
	clear(seed[:])
	if err != nil {
		t.pqGiveUp(now, e, "ML-KEM key generation failed")
		return
	}
	if _, err := io.ReadFull(t.rnd, p.id[:]); err != nil {
		t.pqGiveUp(now, e, "no randomness for the exchange id")
		return
	}
	p.dk, p.offering = dk, true
	p.nextResend = now.Add(t.cfg.HandshakeResendInterval)
	t.stats.PQOffered++
	if err := t.pqSend(now, e, wire.PQKindOffer, dk.EncapsulationKey().Bytes()); err != nil {
		t.log.Debug("post-quantum offer not sent, resending later", "peer", t.name(e.addr), "error", err)
	}
}

// pqSend seals payload's fragments under e's current epoch and sends them.
func (t *Table) pqSend(now time.Time, e *entry, kind wire.PQKind, payload []byte) error {
	frags, err := wire.PQFragments(kind, e.pq.id, payload)
	if err != nil {
		return err
	}
	var flags wire.FSPFlags
	if e.k {
		flags = wire.FSPFlagK
	}
	var b [wire.PQFragmentSize]byte
	for _, f := range frags {
		if _, err := f.MarshalTo(b[:]); err != nil {
			return err
		}
		if err := t.seal(now, e, flags, nil, nil, wire.SessionMsgPQ, b[:], nil); err != nil {
			return fmt.Errorf("session: pq %s fragment %d: %w", kind, f.Index, err)
		}
	}
	return nil
}

// pqTick runs e's upgrade timers: the offer's resends and the deadline.
func (t *Table) pqTick(now time.Time, e *entry) {
	p := &e.pq
	if p.deadline.IsZero() {
		return
	}
	if !now.Before(p.deadline) {
		why := "no post-quantum offer from the peer"
		if p.offering {
			why = "no post-quantum accept from the peer"
		} else if p.answered {
			why = "no frame from the peer on the post-quantum keys"
		}
		t.pqGiveUp(now, e, why)
		return
	}
	if p.offering && !now.Before(p.nextResend) {
		if err := t.pqSend(now, e, wire.PQKindOffer, p.dk.EncapsulationKey().Bytes()); err == nil {
			t.stats.PQOfferResends++
		}
		// At the resend interval, without backoff, until the deadline:
		// two fragments each way must get through, so under loss the
		// tries matter more than the bytes (1.3 kB a second at most).
		p.resends++
		p.nextResend = now.Add(t.cfg.HandshakeResendInterval)
	}
}

// pqGiveUp ends e's upgrade attempt: preferred stays classical, counted;
// required tears the session down with one line.
func (t *Table) pqGiveUp(now time.Time, e *entry, why string) {
	p := &e.pq
	p.deadline = time.Time{}
	if p.mode == PQRequired {
		t.stats.PQRefused++
		n := len(t.pending[e.addr])
		t.stats.PendingDropped += uint64(n)
		t.log.Warn("Session torn down: pq is required and the peer did not upgrade to post-quantum keys",
			"peer", t.name(e.addr), "why", why, "queued_dropped", n)
		t.drop(now, e.addr, "pq_required")
		return
	}
	if p.pend {
		// An answered exchange whose offerer has not been heard on the
		// new keys: they stay pending (a late frame on them still
		// promotes them, so a peer that did cut over is never a black
		// hole); the session is classical until then.
		p.dk, p.offering = nil, false
		p.rx.Reset()
	} else {
		p.resetExchange()
	}
	p.classic = true
	t.stats.PQFallbacks++
	t.log.Info("Session stays classical: the peer did not upgrade to post-quantum keys", "peer", t.name(e.addr), "why", why)
}

func (t *Table) pqRefuse(what string, e *entry) {
	t.stats.PQMessagesRefused++
	t.log.Debug("post-quantum message refused", "why", what, "peer", t.name(e.addr))
}

// handlePQ handles one SessionMsgPQ that authenticated under slot hit
// (slotPending: under the epoch it has just promoted to current).
func (t *Table) handlePQ(now time.Time, e *entry, hit slot, body []byte) {
	p := &e.pq
	onCurrent := hit == slotCurrent || hit == slotPending
	if p.mode == PQOff {
		// As a classic peer: an unknown type, dropped.
		t.stats.UnknownMessageType++
		return
	}
	f, err := wire.ParsePQFragment(body)
	if err != nil {
		t.stats.PQFragmentsRefused++
		t.log.Debug("post-quantum fragment refused", "peer", t.name(e.addr), "error", err)
		return
	}
	switch f.Kind {
	case wire.PQKindOffer:
		switch {
		case !onCurrent || p.epoch == nil || e.cur != p.epoch:
			t.pqRefuse("offer outside the classical epoch it must upgrade", e)
		case p.answered && f.ID == p.id:
			// The offer again: our accept was lost. Answered once per
			// resent offer, on its first fragment.
			if f.Index == 0 {
				if err := t.pqSend(now, e, wire.PQKindAccept, p.accept); err != nil {
					t.log.Debug("post-quantum accept resend failed", "peer", t.name(e.addr), "error", err)
				}
			}
		case p.answered:
			t.pqRefuse("second offer in one epoch (replayed)", e)
		case p.epoch.Role() == noise.Initiator:
			t.pqRefuse("offer from the side that answered this epoch's handshake", e)
		default:
			if payload, ok := t.pqReassemble(e, f); ok {
				t.pqAnswer(now, e, f.ID, payload)
			}
		}
	case wire.PQKindAccept:
		switch {
		case !p.offering:
			t.pqRefuse("accept without an offer", e)
		case f.ID != p.id:
			t.pqRefuse("accept for another exchange", e)
		case !onCurrent || e.cur != p.epoch:
			t.pqRefuse("accept outside the offer's epoch", e)
		default:
			if payload, ok := t.pqReassemble(e, f); ok {
				t.pqFinish(now, e, payload)
			}
		}
	case wire.PQKindConfirm:
		tag := PQConfirmTag(p.keys, "confirm", p.th)
		switch {
		case !p.answered || !p.cur || f.ID != p.id:
			t.pqRefuse("confirm without an exchange on the current keys", e)
		case !hmac.Equal(f.Chunk, tag[:]):
			t.stats.PQConfirmFailed++
			t.pqRefuse("confirm tag does not verify", e)
		}
	}
}

// pqReassemble adds f to e's reassembly; the payload once complete.
func (t *Table) pqReassemble(e *entry, f wire.PQFragment) ([]byte, bool) {
	return e.pq.rx.AddCounted(f, &t.stats.PQFragmentsRefused)
}

// pqAnswer is the answerer's half: encapsulate, install the derived keys
// as the pending epoch, send the accept.
func (t *Table) pqAnswer(now time.Time, e *entry, id [wire.PQIDSize]byte, ekb []byte) {
	p := &e.pq
	if e.pending != nil || e.rekeyInProgress() {
		t.pqRefuse("offer while a rekey is under way", e)
		return
	}
	x, accept, err := pqSchedule.Answer(p.epoch.Exporter(), e.remote, t.id.PublicKey(), id, ekb, ekb, nil)
	if err != nil {
		t.pqRefuse(err.Error(), e)
		return
	}
	keys := x.Keys
	p.id, p.keys, p.th, p.answered, p.accept = id, keys, x.TH, true, accept
	e.pending = noise.NewDerivedSession(e.cur, keys.AnswererToOfferer, keys.OffererToAnswerer, keys.Exporter)
	p.pend = true
	e.rekeyCompleted, e.rekeyInitiator = now, false
	t.stats.PQAccepted++
	if err := t.pqSend(now, e, wire.PQKindAccept, p.accept); err != nil {
		t.log.Debug("post-quantum accept not sent, answering the resent offer", "peer", t.name(e.addr), "error", err)
	}
}

// pqFinish is the offerer's half: decapsulate, verify the accept's key
// confirmation, cut over, confirm on the new keys.
func (t *Table) pqFinish(now time.Time, e *entry, payload []byte) {
	p := &e.pq
	if e.pending != nil || e.rekeyInProgress() {
		// The peer's rekey came first: its cutover restarts the upgrade.
		t.pqRefuse("accept while a rekey is under way", e)
		return
	}
	x, err := pqSchedule.Finish(p.dk, p.epoch.Exporter(), t.id.PublicKey(), e.remote, p.id, p.dk.EncapsulationKey().Bytes(), payload, 0)
	if errors.Is(err, pq.ErrConfirm) {
		// A ciphertext or tag changed on the way (only someone holding
		// the classical keys can): the keys would differ, so no cutover.
		t.stats.PQConfirmFailed++
		t.pqGiveUp(now, e, "the accept's key confirmation failed")
		return
	}
	if err != nil {
		t.pqRefuse(err.Error(), e)
		return
	}
	keys := x.Keys
	p.keys, p.th, p.dk, p.offering = keys, x.TH, nil, false
	e.pending = noise.NewDerivedSession(e.cur, keys.OffererToAnswerer, keys.AnswererToOfferer, keys.Exporter)
	p.pend = true
	t.promote(now, e)
	sealed, err := t.pqConfirm(now, e)
	if err != nil {
		t.log.Debug("post-quantum confirm not sent", "peer", t.name(e.addr), "error", err)
		sealed = []byte{} // resent by Tick all the same
	}
	// Sent again as a rekey's msg3 until the answerer is seen on the new
	// keys (Tick calls pqConfirm for each resend).
	e.msg3Payload, e.msg3NextResend, e.msg3ResendCount = sealed, now.Add(t.cfg.HandshakeResendInterval), 0
	p.confirming = true
}

// pqConfirm seals and sends the offerer's confirm on the current (new)
// keys; it returns a copy of the FSP bytes.
func (t *Table) pqConfirm(now time.Time, e *entry) ([]byte, error) {
	p := &e.pq
	confirm := PQConfirmTag(p.keys, "confirm", p.th)
	frags, err := wire.PQFragments(wire.PQKindConfirm, p.id, confirm[:])
	if err != nil {
		return nil, err
	}
	var b [wire.PQFragmentSize]byte
	if _, err := frags[0].MarshalTo(b[:]); err != nil {
		return nil, err
	}
	flags := wire.FSPFlags(0)
	if e.k {
		flags = wire.FSPFlagK
	}
	return t.sealCopy(now, e, flags, wire.SessionMsgPQ, b[:])
}

// sealCopy seals and sends one message like seal and returns a copy of
// the FSP bytes sent.
func (t *Table) sealCopy(now time.Time, e *entry, flags wire.FSPFlags, typ wire.SessionMessageType, body []byte) ([]byte, error) {
	if err := t.seal(now, e, flags, nil, nil, typ, body, nil); err != nil {
		return nil, err
	}
	total := wire.FSPHeaderSize + wire.FSPInnerHeaderSize + len(body) + wire.FSPTagSize
	return append([]byte(nil), t.buf[:total]...), nil
}

// pqPromoted is promote's hook: the new current epoch is post-quantum or
// a classical one to upgrade.
func (t *Table) pqPromoted(now time.Time, e *entry) {
	p := &e.pq
	p.prev = p.cur
	if p.pend {
		p.cur, p.pend, p.classic = true, false, false
		p.deadline, p.dk, p.offering, p.epoch = time.Time{}, nil, false, nil
		p.rx.Reset()
		t.stats.PQUpgrades++
		t.log.Info("Session upgraded to post-quantum keys (ML-KEM-768)", "peer", t.name(e.addr))
		return
	}
	t.pqEpochStart(now, e)
}
