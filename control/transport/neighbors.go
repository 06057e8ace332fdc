package transport

import (
	"time"
)

// Neighbour is a node a transport heard announce itself on its link (an
// Ethernet beacon): where it is and its x-only public key. The key is
// only a hint; the handshake proves it. A Keyless neighbour (upstream
// next's beacon) is known by its address alone: only a handshake that
// learns the responder's key (Noise XX) can reach it.
type Neighbour struct {
	Addr    Addr
	Key     [32]byte
	Keyless bool
	Seen    time.Time // when its latest announcement arrived
}

// Discoverer is a transport that learns neighbours by itself (Ethernet
// beacons, when listen is on). The node drains it every tick and, when
// AutoConnect says so, dials what it found (upstream's discover and
// auto_connect).
type Discoverer interface {
	// Discover appends the neighbours heard since the last call to dst
	// and forgets them.
	Discover(now time.Time, dst []Neighbour) []Neighbour
	AutoConnect() bool
}

// Neighbours is the buffer between a transport's receive path and the
// node's discovery poll, as upstream's: one entry per address (a new
// announcement from a known address replaces its key and moves it to the
// end), drained by Take. Unlike upstream's it is bounded — an address
// that does not fit is refused and counted — and an entry not drained
// within its expiry is dropped rather than dialled late. It starts no
// goroutine and reads no clock: the caller passes the time. Not safe for
// concurrent use.
type Neighbours struct {
	max     int
	expiry  time.Duration
	entries []Neighbour
	// Refused counts announcements dropped because the buffer was full;
	// Expired, entries dropped for age.
	Refused, Expired uint64
}

// MaxNeighbours bounds NewNeighbours' limit.
const MaxNeighbours = 1 << 16

// NewNeighbours makes a buffer of at most limit addresses (clamped to
// 1..MaxNeighbours) whose entries expire after expiry (≤ 0: never).
func NewNeighbours(limit int, expiry time.Duration) *Neighbours {
	limit = min(max(limit, 1), MaxNeighbours)
	return &Neighbours{max: limit, expiry: expiry, entries: make([]Neighbour, 0, min(limit, 64))}
}

// Len is how many neighbours wait to be drained (expired ones included
// until the next Add or Take).
func (n *Neighbours) Len() int { return len(n.entries) }

// Add records an announcement from a at now. It returns false when the
// buffer is full of other, unexpired addresses and a was refused.
func (n *Neighbours) Add(now time.Time, a Addr, key [32]byte) bool {
	return n.add(Neighbour{Addr: a, Key: key, Seen: now})
}

// AddKeyless records a keyless announcement from a at now. An address
// that also announced its key (a node sending both lines' beacons) keeps
// it, since a dial that names the key is the stronger one.
func (n *Neighbours) AddKeyless(now time.Time, a Addr) bool {
	return n.add(Neighbour{Addr: a, Keyless: true, Seen: now})
}

func (n *Neighbours) add(nb Neighbour) bool {
	now := nb.Seen
	for i := range n.entries {
		if n.entries[i].Addr == nb.Addr {
			if nb.Keyless && !n.entries[i].Keyless {
				nb.Key, nb.Keyless = n.entries[i].Key, false
			}
			copy(n.entries[i:], n.entries[i+1:])
			n.entries[len(n.entries)-1] = nb
			return true
		}
	}
	if len(n.entries) >= n.max {
		n.expire(now)
	}
	if len(n.entries) >= n.max {
		n.Refused++
		return false
	}
	n.entries = append(n.entries, nb)
	return true
}

// Take appends the unexpired neighbours to dst, oldest announcement
// first, and empties the buffer.
func (n *Neighbours) Take(now time.Time, dst []Neighbour) []Neighbour {
	n.expire(now)
	dst = append(dst, n.entries...)
	clear(n.entries)
	n.entries = n.entries[:0]
	return dst
}

// expire drops entries older than the expiry, keeping the order.
func (n *Neighbours) expire(now time.Time) {
	if n.expiry <= 0 {
		return
	}
	k := 0
	for _, e := range n.entries {
		if now.Sub(e.Seen) > n.expiry {
			n.Expired++
			continue
		}
		n.entries[k] = e
		k++
	}
	clear(n.entries[k:])
	n.entries = n.entries[:k]
}
