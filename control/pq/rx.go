package pq

import (
	"errors"

	"github.com/fips-go/fips/control/wire"
)

// ErrConflict: a fragment of another offer or accept than the one being
// reassembled (one at a time).
var ErrConflict = errors.New("pq: fragment of another exchange than the one being reassembled")

// Reassembly puts one offer or accept back together from its fragments:
// one at a time, at most 8 fragments of at most their kind's total size
// (which the fragment decoder has checked).
type Reassembly struct {
	kind wire.PQKind
	id   [wire.PQIDSize]byte
	have uint8 // bit i: fragment i received
	buf  []byte
}

// Add adds f; it returns the payload once complete (valid until the next
// Add), done false while fragments are missing or f is a resent one, and
// ErrConflict for a fragment of another exchange.
func (r *Reassembly) Add(f wire.PQFragment) (payload []byte, done bool, err error) {
	if r.have == 0 {
		r.kind, r.id = f.Kind, f.ID
		if cap(r.buf) < int(f.Total) {
			r.buf = make([]byte, f.Total)
		}
		r.buf = r.buf[:f.Total]
	} else if r.kind != f.Kind || r.id != f.ID || len(r.buf) != int(f.Total) {
		return nil, false, ErrConflict
	}
	bit := uint8(1) << f.Index
	if r.have&bit != 0 {
		return nil, false, nil // a resent fragment
	}
	copy(r.buf[f.Offset():], f.Chunk)
	r.have |= bit
	if r.have != uint8(1)<<f.Count-1 {
		return nil, false, nil
	}
	out := r.buf
	*r = Reassembly{}
	return out, true, nil
}

// Reset forgets a partial reassembly.
func (r *Reassembly) Reset() { *r = Reassembly{} }

// Pending reports whether fragments of a payload are held.
func (r *Reassembly) Pending() bool { return r.have != 0 }

// Held is how many bytes the reassembly holds on to.
func (r *Reassembly) Held() int { return cap(r.buf) }

// AddCounted is Add, counting a conflicting fragment in refused.
func (r *Reassembly) AddCounted(f wire.PQFragment, refused *uint64) ([]byte, bool) {
	payload, done, err := r.Add(f)
	if err != nil {
		*refused++
	}
	return payload, done
}
