package noise

import (
	"bytes"
	"testing"
)

// TestExporter: both sides of a handshake export the same 32 bytes, which
// are neither transport key; a derived session carries what it was given
// and runs on the keys it was given.
func TestExporter(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	si, sr, err := runXK(a, b, evenLift(t, b.PubKey()), nil, []Option{fixedRand(0x33)}, []Option{fixedRand(0x44)})
	if err != nil {
		t.Fatal(err)
	}
	xi, xr := si.Exporter(), sr.Exporter()
	if xi != xr || xi == ([32]byte{}) {
		t.Fatalf("exporters differ or are zero: %x %x", xi, xr)
	}
	// Pinned (self-derived regression): HKDF-Expand(ck, ExporterLabel, 32)
	// over the final chaining key of this deterministic handshake.
	eqHex(t, "XK exporter", xi[:], vecXKExporter)
	for _, k := range []string{vecXKK1, vecXKK2} {
		if bytes.Equal(mustHex(t, k), xi[:]) {
			t.Fatal("exporter equals a transport key")
		}
	}
	var k1, k2, x [32]byte
	k1[0], k2[0], x[0] = 1, 2, 3
	di, dr := NewDerivedSession(si, k1, k2, x), NewDerivedSession(sr, k2, k1, x)
	if di.Exporter() != x || di.Role() != si.Role() || di.RemoteEpoch() != si.RemoteEpoch() {
		t.Fatal("derived session lost its parent's fields")
	}
	exchange(t, di, dr)
}

const vecXKExporter = "fa67d00b6fb6b743f946e933b164cb260df24e0ccd203c134c72700cb4e5689c"
