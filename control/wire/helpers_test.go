package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Helpers shared by every test file of the package.

// mustHex decodes hex, ignoring spaces so vectors can be grouped by field.
func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// addrOf is upstream's make_node_addr: v in byte 0, zeros elsewhere.
func addrOf(v byte) identity.NodeAddr {
	var a identity.NodeAddr
	a[0] = v
	return a
}

// fill returns n bytes of v.
func fill(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// wantKind asserts err is a *wire.DecodeError of the given class.
func wantKind(t testing.TB, err, kind error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", kind)
	}
	var de *wire.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %q (%T) is not a *wire.DecodeError", err, err)
	}
	if !errors.Is(err, kind) || de.Kind != kind {
		t.Fatalf("error %q has class %v, want %v", err, de.Kind, kind)
	}
}

type marshaler interface {
	Len() int
	MarshalTo([]byte) (int, error)
}

// marshal encodes m into an exactly sized buffer and checks that a buffer
// one byte short is refused.
func marshal(t testing.TB, m marshaler) []byte {
	t.Helper()
	b := make([]byte, m.Len())
	n, err := m.MarshalTo(b)
	if err != nil {
		t.Fatalf("MarshalTo: %v", err)
	}
	if n != len(b) {
		t.Fatalf("MarshalTo wrote %d bytes, Len says %d", n, len(b))
	}
	if m.Len() > 0 {
		if _, err := m.MarshalTo(b[:len(b)-1]); !errors.Is(err, wire.ErrBufferTooSmall) {
			t.Fatalf("MarshalTo into a short buffer: got %v, want ErrBufferTooSmall", err)
		}
	}
	return b
}

func equal(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got %x\nwant %x", what, got, want)
	}
}
