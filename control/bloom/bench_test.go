package bloom

import (
	"fmt"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// benchState has n peers, three quarters of them tree peers, each holding
// a filter of about 40 entries.
func benchState(b *testing.B, n int) (*State, *countingEnv, []identity.NodeAddr) {
	env := &countingEnv{tree: map[identity.NodeAddr]bool{}}
	s := newState(env)
	var peers []identity.NodeAddr
	for i := 1; i <= n; i++ {
		p := addr(i)
		peers = append(peers, p)
		env.tree[p] = i%4 != 0
		s.PeerUp(t0, p)
		f := NewFilter()
		for j := 0; j < 40; j++ {
			f.Insert(addr(10000 + i*100 + j))
		}
		if err := s.HandleFilterAnnounce(t0, p, announce(b, 1, f)); err != nil {
			b.Fatal(err)
		}
	}
	return s, env, peers
}

// BenchmarkOutgoingFilters computes the outgoing filter of every peer in
// one prefix/suffix pass.
func BenchmarkOutgoingFilters(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			s, _, _ := benchState(b, n)
			for _, ps := range s.order {
				ps.target = true
			}
			b.ReportAllocs()
			for b.Loop() {
				s.computeOutgoing()
			}
		})
	}
}

// BenchmarkOutgoingFiltersNaive is the per-peer computation, for scale.
func BenchmarkOutgoingFiltersNaive(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			s, _, peers := benchState(b, n)
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range peers {
					_ = s.OutgoingFilter(p)
				}
			}
		})
	}
}

// BenchmarkHandleFilterAnnounce is the accept path: decode, checks,
// store, and marking changed peers.
func BenchmarkHandleFilterAnnounce(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			s, _, peers := benchState(b, n)
			f := filterOf(addr(1), addr(2), addr(3))
			msg := announce(b, 2, f)
			seq := uint64(2)
			b.ReportAllocs()
			for b.Loop() {
				seq++
				msg[1], msg[2], msg[3], msg[4] = byte(seq), byte(seq>>8), byte(seq>>16), byte(seq>>24)
				if err := s.HandleFilterAnnounce(t0, peers[0], msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTick sends an announce to every peer.
func BenchmarkTick(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			s, _, _ := benchState(b, n)
			now := t0
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Second)
				s.MarkAll(now)
				s.Tick(now)
			}
		})
	}
}
