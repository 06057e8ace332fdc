package gateway

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkPoolAllocateUnderPressure: allocations of fresh destinations
// into a full pool of idle mappings, each reclaiming the least recently
// referenced one (a flood of fresh names). The cost per allocation must
// not grow with the pool.
func BenchmarkPoolAllocateUnderPressure(b *testing.B) {
	for _, bits := range []int{120, 116, 112} {
		b.Run(fmt.Sprintf("pool=%d", (1<<(128-bits))-1), func(b *testing.B) {
			c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			p, err := NewPool(PoolOptions{CIDR: fmt.Sprintf("fd01::/%d", bits), TTLSecs: 60, GraceSecs: 60, Now: c.Now, Log: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			next := freshNodes()
			for range p.Status().Total {
				c.Advance(time.Millisecond)
				if _, _, _, err := p.AllocateFor(netip.Addr{}, next(), mesh(1), "x.fips"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.Advance(time.Millisecond)
				if _, _, rm, err := p.AllocateFor(netip.Addr{}, next(), mesh(1), "x.fips"); err != nil || len(rm) != 1 {
					b.Fatalf("%v, %d reclaimed", err, len(rm))
				}
			}
		})
	}
}

// freshNodes returns a source of distinct node addresses.
func freshNodes() func() NodeAddr {
	var seq uint64
	return func() NodeAddr {
		seq++
		var n NodeAddr
		binary.BigEndian.PutUint64(n[1:], seq)
		return n
	}
}
