package ratelimit

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// step is one event of a table test: at ms, take (or, with ready, only
// look) and expect ok.
type step struct {
	ms    int
	ok    bool
	ready bool
}

func TestBucketTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  Rate
		steps []step
	}{
		{"burst then refusal", PerSecond(3, 1), []step{{0, true, false}, {0, true, false}, {0, true, false}, {0, false, false}}},
		{"refill one per period", PerSecond(2, 4), []step{{0, true, false}, {0, true, false}, {249, false, false}, {250, true, false}, {250, false, false}, {500, true, false}}},
		{"refill caps at burst", PerSecond(2, 10), []step{{0, true, false}, {0, true, false}, {60_000, true, false}, {60_000, true, false}, {60_000, false, false}}},
		{"partial refills add up exactly", Every(1, 300*time.Millisecond), []step{{0, true, false}, {100, false, false}, {200, false, false}, {299, false, false}, {300, true, false}}},
		{"refusal does not move the next admission", Every(1, 100*time.Millisecond), []step{{0, true, false}, {99, false, false}, {100, true, false}, {150, false, false}, {200, true, false}}},
		{"fractional burst", PerSecond(2.5, 1), []step{{0, true, false}, {0, true, false}, {0, false, false}, {499, false, false}, {500, true, false}, {500, false, false}}},
		{"ready takes nothing", PerSecond(1, 1), []step{{0, true, true}, {0, true, true}, {0, true, false}, {0, false, true}, {1000, true, true}, {1000, true, false}}},
		{"clock back mints nothing", PerSecond(2, 1), []step{{10_000, true, false}, {10_000, true, false}, {0, false, false}, {10_000, false, false}, {10_999, false, false}, {11_000, true, false}}},
		{"clock back keeps the tokens there are", PerSecond(3, 1), []step{{10_000, true, false}, {-5_000, true, false}, {-9_000, true, false}, {-9_000, false, false}}},
		{"no refill rate", PerSecond(2, 0), []step{{0, true, false}, {0, true, false}, {1e9, false, false}}},
		{"NaN rate never refills", PerSecond(1, math.NaN()), []step{{0, true, false}, {1e9, false, false}}},
		{"infinite rate refills a token a nanosecond", PerSecond(1, math.Inf(1)), []step{{0, true, false}, {0, false, false}, {1, true, false}}},
		{"negative infinite rate never refills", PerSecond(1, math.Inf(-1)), []step{{0, true, false}, {1e9, false, false}}},
		{"burst below one admits nothing", PerSecond(0.5, 10), []step{{0, false, false}, {1e6, false, false}}},
		{"burst below one, no period, admits nothing", Every(0.5, 0), []step{{0, false, false}}},
		{"zero Rate limits nothing", Rate{}, []step{{0, true, false}, {0, true, false}}},
		{"zero period limits nothing", Every(1, 0), []step{{0, true, false}, {0, true, false}}},
		{"huge burst", PerSecond(1e300, 1), []step{{0, true, false}, {0, true, false}}},
		{"sub-nanosecond period limits nothing", PerSecond(1, 1e12), []step{{0, true, false}, {0, true, false}}},
		{"nanosecond period", PerSecond(1, 1e9), []step{{0, true, false}, {0, false, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Bucket
			for i, s := range tc.steps {
				var got bool
				if s.ready {
					got = b.Ready(at(s.ms), tc.rate)
				} else {
					got = b.Take(at(s.ms), tc.rate)
				}
				if got != s.ok {
					t.Fatalf("step %d (%+v): got %v", i, s, got)
				}
			}
		})
	}
}

func TestBucketZeroTime(t *testing.T) {
	var b Bucket
	r := PerSecond(1, 1)
	if !b.Take(time.Time{}, r) || b.Take(time.Time{}, r) {
		t.Fatal("zero time: one token")
	}
	if !b.Take(at(0), r) {
		t.Fatal("refill from the zero time")
	}
}

func TestBucketFullAndCounted(t *testing.T) {
	var b Bucket
	r := PerSecond(2, 2)
	if !b.Full(at(0), r) {
		t.Fatal("zero bucket not full")
	}
	var refused uint64
	for range 3 {
		b.TakeCounted(at(0), r, &refused)
	}
	if refused != 1 || b.Full(at(999), r) || !b.Full(at(1000), r) {
		t.Fatalf("refused %d", refused)
	}
}

func TestKeyedEvictLRU(t *testing.T) {
	k := NewKeyed[int](KeyedConfig{Rates: []Rate{PerSecond(2, 1)}, Max: 3, TouchOnRefusal: true})
	for key := range 3 {
		k.Take(at(0), key)
		k.Take(at(0), key)
	}
	// A refused event touches key 0: key 1 is now the least recent.
	if k.Take(at(0), 0) != Limited {
		t.Fatal("key 0 not limited")
	}
	if k.Take(at(0), 3) != Admitted || k.Evicted != 1 || k.Len() != 3 {
		t.Fatalf("evicted %d len %d", k.Evicted, k.Len())
	}
	if k.Take(at(0), 0) != Limited || k.Take(at(0), 2) != Limited {
		t.Fatal("kept keys lost their state")
	}
	// Key 1 was evicted and starts again full, evicting key 3.
	if k.Take(at(0), 1) != Admitted || k.Evicted != 2 {
		t.Fatalf("evicted %d", k.Evicted)
	}
	if k.Limited != 3 || k.NoRoom != 0 || k.Expired != 0 {
		t.Fatalf("counts %+v", *k)
	}
}

func TestKeyedTouchOnAdmitOnly(t *testing.T) {
	k := NewKeyed[int](KeyedConfig{Rates: []Rate{Every(1, time.Second)}, Max: 2})
	k.Take(at(0), 0)
	k.Take(at(1), 1)
	k.Take(at(2), 0) // refused: 0 stays the least recently admitted
	k.Take(at(3), 2)
	if k.Evicted != 1 || k.Take(at(4), 1) != Limited || k.Take(at(4), 0) != Admitted {
		t.Fatal("evicted the wrong key")
	}
}

func TestKeyedRefuseWhenFull(t *testing.T) {
	k := NewKeyed[int](KeyedConfig{Rates: []Rate{Every(1, 100*time.Millisecond)}, Max: 2, WhenFull: Refuse, Forget: Refilled})
	k.Take(at(0), 0)
	k.Take(at(50), 1)
	if k.Take(at(99), 2) != NoRoom || k.NoRoom != 1 || k.Len() != 2 {
		t.Fatal("full table admitted a new key")
	}
	// Key 0 has refilled: it is forgotten to make room.
	if k.Take(at(100), 2) != Admitted || k.Expired != 1 || k.Len() != 2 {
		t.Fatalf("expired %d len %d", k.Expired, k.Len())
	}
	if k.Take(at(100), 1) != Limited {
		t.Fatal("key 1 forgotten early")
	}
}

func TestKeyedIdleSweep(t *testing.T) {
	k := NewKeyed[int](KeyedConfig{Rates: []Rate{Every(1, 100*time.Millisecond)}, Forget: Idle, IdleAfter: time.Second, SweepOnAdmit: true})
	k.Take(at(0), 0)
	k.Take(at(0), 1)
	k.Take(at(900), 2)
	if k.Len() != 3 {
		t.Fatalf("len %d", k.Len())
	}
	k.Take(at(1000), 3)
	if k.Len() != 2 || k.Expired != 2 {
		t.Fatalf("len %d expired %d", k.Len(), k.Expired)
	}
	k.Sweep(at(1900))
	if k.Len() != 1 || k.Expired != 3 {
		t.Fatalf("len %d expired %d", k.Len(), k.Expired)
	}
}

func TestKeyedClasses(t *testing.T) {
	k := NewKeyed[string](KeyedConfig{Rates: []Rate{PerSecond(1, 1), PerSecond(2, 1)}, Forget: Idle, IdleAfter: time.Minute, TouchOnRefusal: true})
	if k.TakeClass(at(0), "a", 0) != Admitted || k.TakeClass(at(0), "a", 0) != Limited {
		t.Fatal("class 0")
	}
	for i, want := range []Verdict{Admitted, Admitted, Limited} {
		if got := k.TakeClass(at(0), "a", 1); got != want {
			t.Fatalf("class 1, event %d: %v", i, got)
		}
	}
	if !k.Ready(at(0), "b") || k.Ready(at(0), "a") || !k.Ready(at(1000), "a") {
		t.Fatal("ready")
	}
	if k.Len() != 1 {
		t.Fatal("ready inserted a key")
	}
}

func TestKeyedClockBack(t *testing.T) {
	k := NewKeyed[int](KeyedConfig{Rates: []Rate{PerSecond(1, 1)}, Max: 1, Forget: Idle, IdleAfter: time.Second, SweepOnAdmit: true})
	k.Take(at(10_000), 0)
	if k.Take(at(0), 0) != Limited || k.Take(at(10_500), 0) != Limited || k.Take(at(11_000), 0) != Admitted {
		t.Fatal("clock back minted a token")
	}
	k.Take(at(0), 1) // evicts: an idle time from the future is not idle
	if k.Evicted != 1 || k.Len() != 1 {
		t.Fatalf("evicted %d", k.Evicted)
	}
}

func TestNoAllocs(t *testing.T) {
	var b Bucket
	r := PerSecond(10, 10)
	now := t0
	if n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		b.Take(now, r)
		b.Ready(now, r)
	}); n != 0 {
		t.Fatalf("Bucket: %v allocs", n)
	}
	type key struct {
		port uint16
		ip   [16]byte
	}
	k := NewKeyed[key](KeyedConfig{Rates: []Rate{PerSecond(2, 1), Every(1, time.Second)}, Max: 64, Forget: Idle, IdleAfter: time.Hour, SweepOnAdmit: true})
	var i int
	next := func() key {
		i++
		return key{port: uint16(i), ip: [16]byte{byte(i), byte(i >> 8)}}
	}
	for range 1000 { // grow to the bound
		k.Take(now, next())
	}
	if n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		k.Take(now, key{})  // a held key
		k.Take(now, next()) // a new one, evicting
		k.TakeClass(now, key{}, 1)
	}); n != 0 {
		t.Fatalf("Keyed: %v allocs", n)
	}
	if k.Len() != 64 {
		t.Fatalf("len %d", k.Len())
	}
}
