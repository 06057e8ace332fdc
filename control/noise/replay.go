package noise

// ReplayWindowSize is the number of counters the replay window tracks
// below (and including) the highest accepted one.
const ReplayWindowSize = 2048

// ReplayWindow is upstream's 2048-entry sliding anti-replay window
// (WireGuard / RFC 6479 style). The zero value is ready: highest = 0 with
// nothing seen, so counter 0 is accepted exactly once.
//
// The bitmap is a ring of 64-bit blocks (RFC 6479): counter c's bit is bit
// c%64 of block (c/64) mod replayBlocks, and moving the window forward
// clears only the blocks it enters, so an in-order counter costs O(1)
// instead of shifting the whole bitmap. One block more than the window
// spans keeps the window's oldest partial block intact.
//
// Check before decrypting; Accept only after the frame authenticated.
// Not safe for concurrent use.
type ReplayWindow struct {
	highest uint64
	ring    [replayBlocks]uint64
}

const replayBlocks = ReplayWindowSize/64 + 1

// Check reports whether counter may be accepted: above the highest seen,
// or within the window and not yet seen. It does not change the window.
func (w *ReplayWindow) Check(counter uint64) bool {
	if counter > w.highest {
		return true
	}
	if w.highest-counter >= ReplayWindowSize {
		return false
	}
	return w.ring[(counter>>6)%replayBlocks]&(1<<(counter&63)) == 0
}

// Accept marks counter as seen, sliding the window forward when counter is
// a new highest (a jump of the whole ring clears it). Accepting a counter
// older than the window is a no-op.
func (w *ReplayWindow) Accept(counter uint64) {
	if counter > w.highest {
		cur, top := w.highest>>6, counter>>6
		if top-cur >= replayBlocks {
			w.ring = [replayBlocks]uint64{}
		} else {
			for b := cur + 1; b <= top; b++ {
				w.ring[b%replayBlocks] = 0
			}
		}
		w.highest = counter
	} else if w.highest-counter >= ReplayWindowSize {
		return // upstream would index out of bounds; Check never allows this
	}
	w.ring[(counter>>6)%replayBlocks] |= 1 << (counter & 63)
}

// Highest is the highest counter accepted so far (0 initially).
func (w *ReplayWindow) Highest() uint64 { return w.highest }

// Reset empties the window, as for a fresh session.
func (w *ReplayWindow) Reset() { *w = ReplayWindow{} }
