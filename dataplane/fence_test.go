package dataplane

import (
	"testing"

	"github.com/fips-go/fips/control/identity"
)

// TestFenceHoldsOnlyItsFlowSlot: a datagram handed to the loop fences
// the later ones of its flow slot until the loop marks it done, and no
// other slot; an overlay IPv6 destination maps to its node's slot.
func TestFenceHoldsOnlyItsFlowSlot(t *testing.T) {
	var w Worker
	var a, b identity.NodeAddr
	a[0], b[0] = 0x13, 0x14 // slots 3 and 4
	sa, sb := flowSlot(a), flowSlot(b)
	if sa == sb {
		t.Fatalf("a and b share slot %d", sa)
	}
	if w.Fenced() || w.fenced(sa) {
		t.Fatal("a fresh worker is fenced")
	}
	f1 := w.handOff(sa)
	f2 := w.handOff(sa)
	if f1 != f2 || !w.fenced(sa) || w.fenced(sb) || !w.Fenced() {
		t.Fatalf("after two hand-offs of a's slot: fenced a %v, b %v", w.fenced(sa), w.fenced(sb))
	}
	f1.Done()
	if !w.fenced(sa) {
		t.Fatal("one of two hand-offs done lifted the fence")
	}
	f2.Done()
	if w.fenced(sa) || w.Fenced() {
		t.Fatal("both done and still fenced")
	}
	// A node address sharing a's first byte's low bits shares its slot.
	c := a
	c[0] ^= fenceSlots
	if flowSlot(c) != sa {
		t.Fatalf("slot of %x is %d, want %d", c[0], flowSlot(c), sa)
	}
	// An IPv6 packet to a's overlay address (fd, then a's first 15
	// bytes) is in a's slot; a non-IPv6 packet in slot 0.
	pkt := make([]byte, 40)
	pkt[0] = 0x60
	pkt[24] = 0xfd
	copy(pkt[25:40], a[:15])
	if got := flowSlotIPv6(pkt); got != sa {
		t.Fatalf("IPv6 slot %d, want %d", got, sa)
	}
	if got := flowSlotIPv6([]byte{0x45, 0}); got != 0 {
		t.Fatalf("non-IPv6 slot %d", got)
	}
	var nilFence *Fence
	nilFence.Done() // a nil fence is ignored
}
