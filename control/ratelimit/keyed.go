package ratelimit

import "time"

// Classes is the most buckets one key may hold (a session link peer has
// one for strangers' setups and one for established sessions').
const Classes = 2

// WhenFull is what a Keyed table does with a new key when it is full,
// after forgetting what its Forget rule allows.
type WhenFull uint8

const (
	// EvictLRU drops the least recently touched key (counted in Evicted):
	// the evicted key starts again with full buckets.
	EvictLRU WhenFull = iota
	// Refuse refuses the new key (counted in NoRoom).
	Refuse
)

// Forget is which keys a sweep drops (counted in Expired).
type Forget uint8

const (
	// Never: keys leave only by eviction.
	Never Forget = iota
	// Refilled drops keys whose buckets are all full: a new key would
	// start the same.
	Refilled
	// Idle drops keys untouched for at least IdleAfter.
	Idle
)

// KeyedConfig shapes a Keyed table.
type KeyedConfig struct {
	// Rates are the buckets each key holds, at most Classes.
	Rates []Rate
	// Max bounds the keys held; 0 is unbounded.
	Max      int
	WhenFull WhenFull
	Forget   Forget
	// IdleAfter is Forget Idle's age.
	IdleAfter time.Duration
	// TouchOnRefusal: a refused event touches its key too (the LRU order
	// and Idle count from the last event); otherwise only admitted events
	// do.
	TouchOnRefusal bool
	// SweepOnAdmit sweeps after every admitted event, not only when a new
	// key finds the table full and at the caller's Sweep.
	SweepOnAdmit bool
}

// Verdict is a Keyed event's outcome.
type Verdict uint8

const (
	Admitted Verdict = iota
	Limited          // the key's bucket was empty
	NoRoom           // a new key, and the table full (Refuse)
)

// Keyed is a bounded table of buckets, one set per key, in least recently
// touched order. It counts what it refused and dropped. After the table
// has grown to its bound, an event allocates nothing.
type Keyed[K comparable] struct {
	cfg   KeyedConfig
	idx   map[K]int32
	ents  []entry[K]
	free  int32 // head of the free slots, chained by next; -1: none
	head  int32 // most recently touched; -1: empty
	tail  int32
	count int

	// Limited, NoRoom, Evicted and Expired count events refused by a
	// bucket, new keys refused for want of room, keys evicted to make
	// room and keys forgotten by a sweep.
	Limited, NoRoom, Evicted, Expired uint64
}

type entry[K comparable] struct {
	key        K
	b          [Classes]Bucket
	touched    time.Time
	prev, next int32
}

// NewKeyed returns an empty table.
func NewKeyed[K comparable](cfg KeyedConfig) *Keyed[K] {
	if len(cfg.Rates) == 0 || len(cfg.Rates) > Classes {
		panic("ratelimit: a Keyed table needs 1 to Classes rates")
	}
	return &Keyed[K]{cfg: cfg, idx: map[K]int32{}, free: -1, head: -1, tail: -1}
}

// Len is the number of keys held.
func (k *Keyed[K]) Len() int { return k.count }

// Take draws one token from key's bucket of class 0.
func (k *Keyed[K]) Take(now time.Time, key K) Verdict { return k.TakeClass(now, key, 0) }

// TakeClass draws one token from key's bucket of the given class.
func (k *Keyed[K]) TakeClass(now time.Time, key K, class int) Verdict {
	i, ok := k.idx[key]
	if !ok {
		if k.cfg.Max > 0 && k.count >= k.cfg.Max {
			if k.cfg.Forget != Never {
				k.Sweep(now)
			}
			if k.count >= k.cfg.Max {
				if k.cfg.WhenFull == Refuse {
					k.NoRoom++
					return NoRoom
				}
				k.remove(k.tail)
				k.Evicted++
			}
		}
		i = k.insert(key, now)
	}
	e := &k.ents[i]
	if !e.b[class].Take(now, k.cfg.Rates[class]) {
		k.Limited++
		if k.cfg.TouchOnRefusal {
			k.touch(i, now)
		}
		return Limited
	}
	k.touch(i, now)
	if k.cfg.SweepOnAdmit {
		k.Sweep(now)
	}
	return Admitted
}

// Ready reports whether TakeClass(now, key, 0) would find a token (a new
// key would; room is not considered), changing no order or count.
func (k *Keyed[K]) Ready(now time.Time, key K) bool {
	i, ok := k.idx[key]
	return !ok || k.ents[i].b[0].Ready(now, k.cfg.Rates[0])
}

// Sweep forgets the keys the Forget rule allows.
func (k *Keyed[K]) Sweep(now time.Time) {
	if k.cfg.Forget == Never {
		return
	}
	for i := k.tail; i >= 0; {
		e := &k.ents[i]
		prev := e.prev
		if k.forgettable(e, now) {
			k.remove(i)
			k.Expired++
		}
		i = prev
	}
}

func (k *Keyed[K]) forgettable(e *entry[K], now time.Time) bool {
	if k.cfg.Forget == Idle {
		return now.Sub(e.touched) >= k.cfg.IdleAfter
	}
	for c, r := range k.cfg.Rates {
		if !e.b[c].Full(now, r) {
			return false
		}
	}
	return true
}

func (k *Keyed[K]) insert(key K, now time.Time) int32 {
	var i int32
	if k.free >= 0 {
		i = k.free
		k.free = k.ents[i].next
	} else {
		k.ents = append(k.ents, entry[K]{})
		i = int32(len(k.ents) - 1)
	}
	k.ents[i] = entry[K]{key: key, touched: now, prev: -1, next: k.head}
	if k.head >= 0 {
		k.ents[k.head].prev = i
	} else {
		k.tail = i
	}
	k.head = i
	k.idx[key] = i
	k.count++
	return i
}

func (k *Keyed[K]) touch(i int32, now time.Time) {
	e := &k.ents[i]
	e.touched = now
	if k.head == i {
		return
	}
	k.unlink(i)
	e.prev, e.next = -1, k.head
	k.ents[k.head].prev = i
	k.head = i
}

func (k *Keyed[K]) unlink(i int32) {
	e := &k.ents[i]
	if e.prev >= 0 {
		k.ents[e.prev].next = e.next
	} else {
		k.head = e.next
	}
	if e.next >= 0 {
		k.ents[e.next].prev = e.prev
	} else {
		k.tail = e.prev
	}
	if k.head < 0 {
		k.tail = -1
	}
}

func (k *Keyed[K]) remove(i int32) {
	k.unlink(i)
	delete(k.idx, k.ents[i].key)
	var zero K
	k.ents[i] = entry[K]{key: zero, next: k.free}
	k.free = i
	k.count--
}
