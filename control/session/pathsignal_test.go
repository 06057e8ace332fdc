package session

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// rawSignal builds an FSP routing error signal byte by byte, as a forger
// would, without the wire package: prefix (version 0, phase 0, flags U,
// payload length), msg_type, flags, dest, reporter, then tail.
func rawSignal(typ byte, dest, reporter identity.NodeAddr, tail ...byte) []byte {
	b := []byte{0x00, 0x04, 0, 0, typ, 0}
	b = append(b, dest[:]...)
	b = append(b, reporter[:]...)
	b = append(b, tail...)
	binary.LittleEndian.PutUint16(b[2:], uint16(len(b)-4))
	return b
}

func rawMtuExceeded(dest, reporter identity.NodeAddr, mtu uint16) []byte {
	return rawSignal(0x22, dest, reporter, byte(mtu), byte(mtu>>8))
}

func rawPathBroken(dest, reporter identity.NodeAddr) []byte {
	return rawSignal(0x21, dest, reporter, 0, 0) // no last-known coordinates
}

// TestForgedPathSignalsCannotPinMTU mounts issue 27's attack: plaintext
// MtuExceeded and PathBroken for an established session, from nodes off
// its path, with a spoofed reporter, with a spoofed source arriving over
// the wrong link, and from a spoofed tree ancestor contradicting the path
// MTU the destination reported. None lowers the session's MTU, releases
// its clamp or invalidates its coordinates; the genuine relay's report
// still clamps, the clamp ages out, and the session keeps delivering.
func TestForgedPathSignalsCannotPinMTU(t *testing.T) {
	m, a, b := pair(t, 61, DefaultConfig())
	establish(t, m, a, b)
	relay := identity.NodeAddr{0x52}    // our next hop towards b, a link peer
	root := identity.NodeAddr{0x01}     // our and b's tree ancestor
	stranger := identity.NodeAddr{0x66} // a mesh member off the path
	other := identity.NodeAddr{0x67}    // another link peer of ours
	a.hops = map[identity.NodeAddr]identity.NodeAddr{b.addr: relay}
	a.coords = []identity.NodeAddr{a.addr, root}
	a.cache[b.addr] = []identity.NodeAddr{b.addr, root}

	forged := []struct {
		name          string
		src, fromPeer identity.NodeAddr
		b             []byte
	}{
		{"stranger as itself", stranger, other, rawMtuExceeded(b.addr, stranger, 256)},
		{"stranger naming the relay as reporter", stranger, other, rawMtuExceeded(b.addr, relay, 256)},
		{"spoofed relay source over another link", relay, other, rawMtuExceeded(b.addr, relay, 256)},
	}
	for _, f := range forged {
		a.tbl.HandleFSP(m.now, f.src, f.fromPeer, false, f.b)
		if mtu, ok := a.tbl.PathMTU(b.addr); ok {
			t.Fatalf("%s: clamped to %d", f.name, mtu)
		}
	}
	if st := a.tbl.Stats(); st.MtuExceededOffPath != 3 {
		t.Fatalf("mtu_exceeded_off_path %d, want 3", st.MtuExceededOffPath)
	}

	// The genuine relay, over its own link, still clamps.
	a.tbl.HandleFSP(m.now, relay, relay, false, rawMtuExceeded(b.addr, relay, 1000))
	if mtu, ok := a.tbl.PathMTU(b.addr); !ok || mtu != 1000 {
		t.Fatalf("genuine relay report: clamp %d %v, want 1000", mtu, ok)
	}

	// A forged PathBroken neither invalidates b's coordinates nor releases
	// the clamp (it may start a lookup, whose answer is authenticated).
	a.tbl.HandleFSP(m.now, stranger, other, false, rawPathBroken(b.addr, stranger))
	if mtu, ok := a.tbl.PathMTU(b.addr); !ok || mtu != 1000 {
		t.Fatalf("forged PathBroken released the clamp (%d %v)", mtu, ok)
	}
	if _, ok := a.cache[b.addr]; !ok || a.invalid != 0 {
		t.Fatal("forged PathBroken invalidated the coordinates")
	}
	if st := a.tbl.Stats(); st.PathBrokenOffPath != 1 {
		t.Fatalf("path_broken_off_path %d, want 1", st.PathBrokenOffPath)
	}

	// b reported 1000 end to end: an MtuExceeded below it, even from a
	// claimed ancestor on the tree path, is contradicted.
	a.notified = map[identity.NodeAddr]uint16{b.addr: 1000}
	a.tbl.HandleFSP(m.now, root, other, false, rawMtuExceeded(b.addr, root, 300))
	if mtu, _ := a.tbl.PathMTU(b.addr); mtu != 1000 {
		t.Fatalf("contradicted report clamped to %d", mtu)
	}
	if st := a.tbl.Stats(); st.MtuExceededContradicted != 1 {
		t.Fatalf("mtu_exceeded_contradicted %d, want 1", st.MtuExceededContradicted)
	}

	// Traffic still flows.
	b.delivered = nil
	if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if len(b.delivered) != 1 || string(b.delivered[0].payload) != "still here" {
		t.Fatalf("delivered %v", b.delivered)
	}

	// The clamp ages out while the session carries traffic: the path is
	// tried at full size again.
	a.events = nil
	start := m.now
	for m.now.Sub(start) < ClampLifetime-time.Minute {
		m.advance(time.Minute)
		a.tbl.Send(m.now, b.addr, 1, 1, []byte("k"))
		m.tickAll()
	}
	if _, ok := a.tbl.PathMTU(b.addr); !ok {
		t.Fatal("clamp released early")
	}
	m.advance(time.Minute)
	m.tickAll()
	if _, ok := a.tbl.PathMTU(b.addr); ok {
		t.Fatal("clamp did not age out")
	}
	if !a.tbl.Established(b.addr) {
		t.Fatal("session lost")
	}
	if st := a.tbl.Stats(); st.ClampsExpired != 1 {
		t.Fatalf("clamps_expired %d, want 1", st.ClampsExpired)
	}
	released := false
	for _, ev := range a.events {
		released = released || (ev.Kind == EventPathMTU && ev.Remote == b.addr && ev.MTU == 0)
	}
	if !released {
		t.Fatalf("no release event in %v", a.events)
	}
}
