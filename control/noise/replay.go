package noise

// ReplayWindowSize is the number of counters the replay window tracks
// below (and including) the highest accepted one.
const ReplayWindowSize = 2048

// ReplayWindow is upstream's 2048-entry sliding anti-replay window
// (WireGuard / RFC 6479 style). The zero value is ready: highest = 0 with
// nothing seen, so counter 0 is accepted exactly once.
//
// Check before decrypting; Accept only after the frame authenticated.
// Not safe for concurrent use.
type ReplayWindow struct {
	highest uint64
	// Bit i (word i/64, bit i%64) set ⇔ counter highest-i was accepted.
	bitmap [ReplayWindowSize / 64]uint64
}

// Check reports whether counter may be accepted: above the highest seen,
// or within the window and not yet seen. It does not change the window.
func (w *ReplayWindow) Check(counter uint64) bool {
	if counter > w.highest {
		return true
	}
	d := w.highest - counter
	if d >= ReplayWindowSize {
		return false
	}
	return w.bitmap[d/64]&(1<<(d%64)) == 0
}

// Accept marks counter as seen, sliding the window forward when counter is
// a new highest (a jump of ReplayWindowSize or more clears it). Accepting a
// counter older than the window is a no-op.
func (w *ReplayWindow) Accept(counter uint64) {
	if counter > w.highest {
		w.shift(counter - w.highest)
		w.highest = counter
		w.bitmap[0] |= 1
		return
	}
	d := w.highest - counter
	if d >= ReplayWindowSize {
		return // upstream would index out of bounds; Check never allows this
	}
	w.bitmap[d/64] |= 1 << (d % 64)
}

// shift moves every bit n places towards older counters.
func (w *ReplayWindow) shift(n uint64) {
	if n >= ReplayWindowSize {
		w.bitmap = [ReplayWindowSize / 64]uint64{}
		return
	}
	words, bits := int(n/64), n%64
	if words > 0 {
		copy(w.bitmap[words:], w.bitmap[:len(w.bitmap)-words])
		clear(w.bitmap[:words])
	}
	if bits > 0 {
		var carry uint64
		for i := range w.bitmap {
			next := w.bitmap[i] >> (64 - bits)
			w.bitmap[i] = w.bitmap[i]<<bits | carry
			carry = next
		}
	}
}

// Highest is the highest counter accepted so far (0 initially).
func (w *ReplayWindow) Highest() uint64 { return w.highest }

// Reset empties the window, as for a fresh session.
func (w *ReplayWindow) Reset() { *w = ReplayWindow{} }
