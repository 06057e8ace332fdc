package dataplane

import (
	"sync/atomic"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
)

// The seam between the workers and the control loop, in the worker's
// direction: what a worker may not finish, it hands the loop as one of
// the typed upcalls below, through the Loop the node gives the engine.
// Each carrying a payload holds a copy in Buf, which the loop releases.

// Loop is the control loop as the workers see it: one method per kind of
// upcall. Each may block while the loop's queue is full and returns
// false once the loop has stopped; the caller then releases what it
// carried and counts the refusal.
type Loop interface {
	// Frame: an established frame a worker opened whose message only the
	// loop may finish (link control, a datagram without a published
	// route, one carrying coordinates, one for a session not published).
	Frame(FrameUpcall) bool
	// FSP: an end-to-end message a worker decrypted on a published
	// session but does not deliver itself (reports, other ports).
	FSP(FSPUpcall) bool
	// Proof: the first frame on a link's answered-rekey session opened.
	Proof(ProofUpcall) bool
	// Promote: a session's pending epoch authenticated a message.
	Promote(PromoteUpcall) bool
	// Packet: a datagram a reader received that its worker left to the
	// loop (a handshake, an unknown index, a stranger's address), as a
	// transport delivers it (transport.Deliver).
	Packet(transport.Packet) bool
	// TUN: a packet read from the TUN device that its worker left to the
	// loop (no published session or route for it).
	TUN(TUNUpcall) bool
	// Learn: a copy of a transit SessionDatagram carrying plaintext
	// coordinates (a session handshake's msg1/msg2, a coordinate warmup)
	// that a worker forwarded itself, for the loop's coordinate cache.
	Learn(LearnUpcall) bool
}

// LearnUpcall is a transit SessionDatagram a worker forwarded, for the
// loop to warm its coordinate cache from, as its router does with every
// datagram it forwards; nothing else is done with it.
type LearnUpcall struct {
	Msg []byte // the SessionDatagram, type byte first: a copy in Buf
	Buf *transport.Buffer
}

// FrameUpcall is an opened frame of a published link for the loop.
type FrameUpcall struct {
	Link  *peer.FastLink
	Flags uint8  // the frame's FMP flags (outer CE folded in)
	TS    uint32 // the inner timestamp
	Msg   []byte // the link message, type byte first: a copy in Buf
	Buf   *transport.Buffer
	// Arrived is when the kernel received the frame (Unix ns), 0 unknown.
	Arrived int64
	// Fence, set for a SessionDatagram, is what the loop marks done once
	// it has handled the frame (see Worker.Fenced).
	Fence *Fence
}

// FSPUpcall is an end-to-end message opened on Src's current session
// epoch at Counter, already fed to session MMP, for the loop to finish.
type FSPUpcall struct {
	Src     identity.NodeAddr
	Counter uint64
	CE      bool
	Msg     []byte // the inner plaintext: a copy in Buf
	Buf     *transport.Buffer
	Fence   *Fence
}

// ProofUpcall: Link's answered-rekey session authenticated its first
// frame on a worker (peer.Manager.ProveFast).
type ProofUpcall struct {
	Link *peer.FastLink
}

// PromoteUpcall: Src's pending end-to-end epoch Epoch authenticated a
// message on a worker (session.Table.PromoteFast).
type PromoteUpcall struct {
	Src   identity.NodeAddr
	Epoch session.Epoch
}

// TUNUpcall is a packet read from the TUN device for the loop to send.
type TUNUpcall struct {
	Pkt []byte // a copy in Buf
	Buf *transport.Buffer
	// Read is when it was read (Unix ns), for the loop's queue
	// management.
	Read int64
	// Fence is the reader's (nil without a worker).
	Fence *Fence
}

// Fence keeps a worker's flows in order across the loop: the worker
// counts what it handed the loop, the loop marks each done once handled.
type Fence struct {
	handedOff uint64        // the worker's count
	finished  atomic.Uint64 // the loop's
}

// Done marks one handed-off datagram handled (the loop, or a refusal).
// A nil Fence is ignored.
func (f *Fence) Done() {
	if f != nil {
		f.finished.Add(1)
	}
}

// inFlight reports whether something handed off is not handled yet.
func (f *Fence) inFlight() bool { return f.handedOff != f.finished.Load() }
