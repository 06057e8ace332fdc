package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// linkPQMsgs encodes every MsgLinkPQ message of an offer and an accept.
func linkPQMsgs(t testing.TB) [][]byte {
	var out [][]byte
	for _, k := range []wire.PQKind{wire.PQKindOffer, wire.PQKindAccept} {
		payload := make([]byte, wire.LinkPQPayloadSize(k))
		for i := range payload {
			payload[i] = byte(i * 13)
		}
		frags, err := wire.LinkPQFragments(k, [8]byte{7}, payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frags {
			b := make([]byte, wire.LinkPQMsgSize)
			if n, err := wire.MarshalLinkPQ(b, f); err != nil || n != wire.LinkPQMsgSize {
				t.Fatalf("marshal: %d, %v", n, err)
			}
			out = append(out, b)
		}
	}
	return out
}

// TestLinkPQRoundTrip: offers and accepts are two fragments each, every
// message the same size, and reassemble to their payloads; a session
// confirm kind and a session-sized payload are refused with typed errors.
func TestLinkPQRoundTrip(t *testing.T) {
	msgs := linkPQMsgs(t)
	if len(msgs) != 4 {
		t.Fatalf("%d messages, want 2 + 2", len(msgs))
	}
	for i, b := range msgs {
		f, err := wire.ParseLinkPQ(b)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if wantKind := []wire.PQKind{1, 1, 2, 2}[i]; f.Kind != wantKind || int(f.Index) != i%2 || f.Count != 2 {
			t.Fatalf("message %d: %+v", i, f)
		}
		for j := range f.Chunk {
			if f.Chunk[j] != byte((f.Offset()+j)*13) {
				t.Fatalf("message %d: chunk byte %d", i, j)
			}
		}
	}
	if n := wire.FMPHeaderSize + 4 + wire.LinkPQMsgSize + wire.FMPTagSize; n != 653 || n > 1280-48 {
		t.Fatalf("frame of %d bytes", n)
	}
	// A session's confirm fragment is no link message.
	frags, err := wire.PQFragments(wire.PQKindConfirm, [8]byte{1}, make([]byte, wire.PQConfirmPayloadSize))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, wire.LinkPQMsgSize)
	if _, err := wire.MarshalLinkPQ(b, frags[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ParseLinkPQ(b); !errors.Is(err, wire.ErrType) {
		t.Fatalf("confirm kind: %v", err)
	}
	// A session offer fragment (total 1,184) is not a link offer (1,188).
	frags, err = wire.PQFragments(wire.PQKindOffer, [8]byte{1}, make([]byte, wire.PQOfferSize))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.MarshalLinkPQ(b, frags[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ParseLinkPQ(b); !errors.Is(err, wire.ErrLength) {
		t.Fatalf("session-sized offer: %v", err)
	}
	if _, err := wire.LinkPQFragments(wire.PQKindOffer, [8]byte{}, make([]byte, wire.PQOfferSize)); !errors.Is(err, wire.ErrLength) {
		t.Fatalf("short payload: %v", err)
	}
	bad := bytes.Clone(msgs[0])
	bad[0] = byte(wire.MsgHeartbeat)
	if _, err := wire.ParseLinkPQ(bad); !errors.Is(err, wire.ErrType) {
		t.Fatalf("wrong type byte: %v", err)
	}
}

type linkPQValue struct{ f wire.PQFragment }

func (v linkPQValue) Len() int                        { return wire.LinkPQMsgSize }
func (v linkPQValue) MarshalTo(b []byte) (int, error) { return wire.MarshalLinkPQ(b, v.f) }

// FuzzLinkPQ: the MsgLinkPQ decoder fails with a *DecodeError or decodes a
// value that re-encodes to exactly its input.
func FuzzLinkPQ(f *testing.F) {
	for _, b := range linkPQMsgs(f) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{byte(wire.MsgLinkPQ)})
	f.Add(make([]byte, wire.LinkPQMsgSize))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := wire.ParseLinkPQ(in)
		fspCheckDecode(t, in, linkPQValue{fr}, err)
		if err == nil && fr.Offset()+len(fr.Chunk) > int(fr.Total) {
			t.Fatalf("chunk past the payload: offset %d + %d > %d", fr.Offset(), len(fr.Chunk), fr.Total)
		}
	})
}
