package mesh

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// echoRequest builds an ICMPv6 echo request (checksum left zero: the
// adapter carries packets, it does not check them).
func echoRequest(src, dst netip.Addr, payload int) []byte {
	p := make([]byte, 40+8+payload)
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], uint16(8+payload))
	p[6], p[7] = 58, 64
	s, d := src.As16(), dst.As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	p[40] = 128
	for i := 48; i < len(p); i++ {
		p[i] = byte(i)
	}
	return p
}

// TestIPv6AdapterAcrossAChain: an IPv6 packet read from A's device comes
// out of C's device unchanged, two hops away, once A knows C's key; a
// destination outside fd00::/8 or with no known key gets Destination
// Unreachable, an oversize packet Packet Too Big, and A's own address
// hairpins.
func TestIPv6AdapterAcrossAChain(t *testing.T) {
	net := New(Options{Seed: 61})
	nodes := net.AddNodes(3)
	net.Connect(nodes[0], nodes[1], 5*time.Millisecond, 0)
	net.Connect(nodes[1], nodes[2], 5*time.Millisecond, 0)
	a, c := nodes[0], nodes[2]
	var outA, outC [][]byte
	if err := a.Core.EnableIPv6(func(p []byte) { outA = append(outA, bytes.Clone(p)) }); err != nil {
		t.Fatal(err)
	}
	if err := c.Core.EnableIPv6(func(p []byte) { outC = append(outC, bytes.Clone(p)) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
		t.Fatal("not converged")
	}
	net.Run(10 * time.Second)

	// Unknown key: unreachable.
	req := echoRequest(a.ID.IPv6(), c.ID.IPv6(), 56)
	a.Core.SendIPv6(net.Now(), req)
	if len(outA) != 1 || outA[0][40] != 1 {
		t.Fatalf("no Destination Unreachable for an unknown key: %d packets", len(outA))
	}
	// Known key (as DNS would teach it): delivered intact.
	a.Core.LearnIdentity(c.ID.PublicKey())
	outA = nil
	net.Run(time.Second) // the unreachable limiter's 100 ms per source
	for i := range 5 {
		p := echoRequest(a.ID.IPv6(), c.ID.IPv6(), 56+i)
		a.Core.SendIPv6(net.Now(), p)
		net.Run(200 * time.Millisecond)
		if len(outC) != i+1 || !bytes.Equal(outC[i], p) {
			t.Fatalf("packet %d: C got %d packets; last %x", i, len(outC), outC[len(outC)-1])
		}
	}
	// Not fd00::/8.
	a.Core.SendIPv6(net.Now(), echoRequest(a.ID.IPv6(), netip.MustParseAddr("2001:db8::1"), 8))
	// Oversize.
	net.Run(time.Second)
	a.Core.SendIPv6(net.Now(), echoRequest(a.ID.IPv6(), c.ID.IPv6(), 1300))
	// Hairpin.
	self := echoRequest(a.ID.IPv6(), a.ID.IPv6(), 8)
	a.Core.SendIPv6(net.Now(), self)
	if len(outA) != 3 || outA[0][40] != 1 || outA[1][40] != 2 || !bytes.Equal(outA[2], self) {
		t.Fatalf("A's device got %d packets (want unreachable, too big, hairpin)", len(outA))
	}
	if mtu := binary.BigEndian.Uint32(outA[1][44:]); mtu != 1203 {
		t.Errorf("Packet Too Big MTU %d, want 1203", mtu)
	}
	st := a.Core.IPv6Stats()
	t.Logf("A: %+v", st)
}

// TestIPv6UnreachableWhenLookupFails: A knows C's key but cannot reach
// it. When no peer's filter holds C the lookup fails at once; when C has
// just crashed behind B (filters still hold it) the lookup goes out and
// times out. Either way every packet queued for C comes back to A's
// device as Destination Unreachable (no route) from A, quoting that
// packet, and nothing stays queued.
func TestIPv6UnreachableWhenLookupFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crashed bool // C linked behind B, then crashed; else C has no link
	}{{"bloom miss", false}, {"lookup timeout", true}} {
		t.Run(tc.name, func(t *testing.T) {
			net := New(Options{Seed: 62})
			nodes := net.AddNodes(3)
			a, c := nodes[0], nodes[2]
			net.Connect(a, nodes[1], 5*time.Millisecond, 0)
			if tc.crashed {
				net.Connect(nodes[1], c, 5*time.Millisecond, 0)
			}
			var outA [][]byte
			if err := a.Core.EnableIPv6(func(p []byte) { outA = append(outA, bytes.Clone(p)) }); err != nil {
				t.Fatal(err)
			}
			if tc.crashed {
				if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
					t.Fatal("not converged")
				}
				net.Run(5 * time.Second)
				c.Crash()
			} else {
				net.Run(10 * time.Second)
			}
			a.Core.LearnIdentity(c.ID.PublicKey())
			var sent [][]byte
			for i := range 3 {
				p := echoRequest(a.ID.IPv6(), c.ID.IPv6(), 20+i)
				sent = append(sent, p)
				a.Core.SendIPv6(net.Now(), p)
			}
			took, ok := net.RunUntil(func() bool { return len(outA) == len(sent) }, 2*time.Minute)
			if !ok {
				t.Fatalf("A's device got %d of %d unreachables; stats %+v", len(outA), len(sent), a.Core.IPv6Stats())
			}
			t.Logf("all %d answered after %v (simulated)", len(sent), took)
			for i, p := range outA {
				if p[6] != 58 || p[40] != 1 || p[41] != 0 || !bytes.Equal(p[48:], sent[i]) {
					t.Fatalf("reply %d is not Destination Unreachable (no route) quoting packet %d: % x", i, i, p[:48])
				}
				if src := netip.AddrFrom16([16]byte(p[8:24])); src != a.ID.IPv6() {
					t.Errorf("reply %d from %s, want A's own address", i, src)
				}
			}
			if st := a.Core.IPv6Stats(); st.LookupUnreachable != 3 {
				t.Errorf("LookupUnreachable = %d, want 3", st.LookupUnreachable)
			}
			if n := a.Core.Sessions().PendingDestinations(); n != 0 {
				t.Errorf("%d destinations still queued", n)
			}
			if tc.crashed {
				if ev, ok := a.Core.LookupResult(c.ID.NodeAddr()); !ok || ev.Outcome.String() != "timed_out" {
					t.Errorf("lookup result %+v %v, want timed out", ev, ok)
				}
			}
		})
	}
}
