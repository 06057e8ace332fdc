package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

func TestLookupRequestV1(t *testing.T) {
	r := LookupRequestV1{RequestID: 0x0102030405060708, TTL: 64, MinMTU: 1280}
	for i := range r.Target {
		r.Target[i], r.Origin[i] = 0xaa, 0xbb
	}
	b := make([]byte, r.Len())
	if n, err := r.MarshalTo(b); err != nil || n != LookupRequestV1Size {
		t.Fatalf("%d %v", n, err)
	}
	want := "30" + "0807060504030201" + hex.EncodeToString(bytes.Repeat([]byte{0xaa}, 16)) +
		hex.EncodeToString(bytes.Repeat([]byte{0xbb}, 16)) + "40" + "0005"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("encoded %s\nwant    %s", got, want)
	}
	withTLV := r
	withTLV.TLVs = []TLV{{Field: 9, Value: []byte{1, 2, 3}}}
	b = make([]byte, withTLV.Len())
	if _, err := withTLV.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	d, err := ParseLookupRequestV1(b)
	if err != nil || d.RequestID != r.RequestID || d.Target != r.Target || d.Origin != r.Origin || d.TTL != 64 || d.MinMTU != 1280 ||
		len(d.TLVs) != 1 || d.TLVs[0].Field != 9 || !bytes.Equal(d.TLVs[0].Value, []byte{1, 2, 3}) {
		t.Fatalf("decoded %+v %v", d, err)
	}
	if _, err := ParseLookupRequestV1(b[:43]); !errors.Is(err, ErrTruncated) {
		t.Errorf("43 bytes: %v", err)
	}
	if _, err := ParseLookupRequestV1(b[:46]); !errors.Is(err, ErrTruncated) {
		t.Errorf("a 2-byte TLV stub: %v", err)
	}
}

func TestLookupResponseV1(t *testing.T) {
	base := LookupResponse{RequestID: 7, PathMTU: 1400, TargetCoords: Coords(bytes.Repeat([]byte{0xcc}, 32)), Proof: bytes.Repeat([]byte{0xdd}, 64)}
	r := LookupResponseV1{LookupResponse: base, TLVs: []TLV{{Field: 2, Value: []byte{0xee}}}}
	b := make([]byte, r.Len())
	if _, err := r.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, base.Len())
	if _, err := base.MarshalTo(plain); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:len(plain)], plain) || hex.EncodeToString(b[len(plain):]) != "02000100ee" {
		t.Fatalf("v1 response is not master's followed by the TLV: %x", b)
	}
	d, err := ParseLookupResponseV1(b)
	if err != nil || d.RequestID != 7 || d.PathMTU != 1400 || !bytes.Equal(d.TargetCoords, base.TargetCoords) || len(d.TLVs) != 1 {
		t.Fatalf("%+v %v", d, err)
	}
	// The proof covers the same bytes with or without TLVs.
	if !bytes.Equal(d.ProofBytes(nil), base.ProofBytes(nil)) {
		t.Error("TLVs changed the signed bytes")
	}
	if _, err := ParseLookupResponseV1(b[:len(b)-2]); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated TLV: %v", err)
	}
}

func FuzzParseLookupV1(f *testing.F) {
	f.Add(append([]byte{0x30}, make([]byte, 47)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseLookupRequestV1(b); err == nil {
			out := make([]byte, r.Len())
			if _, err := r.MarshalTo(out); err != nil || !bytes.Equal(out, b) {
				t.Fatalf("request re-encoded %x (%v) from %x", out, err, b)
			}
		}
		if r, err := ParseLookupResponseV1(b); err == nil {
			out := make([]byte, r.Len())
			if _, err := r.MarshalTo(out); err != nil || !bytes.Equal(out, b) {
				t.Fatalf("response re-encoded %x (%v) from %x", out, err, b)
			}
		}
	})
}
