package udp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func cmsg(level, typ int32, v uint32) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafePointer(b))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], v)
	return b
}

func TestParseCmsgs(t *testing.T) {
	b := append(cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, 1200), cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 7)...)
	seg, ovfl, ok := parseCmsgs(b)
	if seg != 1200 || ovfl != 7 || !ok {
		t.Fatalf("parseCmsgs = %d %d %v", seg, ovfl, ok)
	}
	if seg, _, ok := parseCmsgs(b[:5]); seg != 0 || ok {
		t.Error("a cut header was read")
	}
}

func FuzzParseCmsgs(f *testing.F) {
	f.Add(append(cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, 1200), cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 7)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Aligned like a kernel control buffer.
		buf := make([]byte, len(b)+8)
		copy(buf, b)
		parseCmsgs(buf[:len(b)])
	})
}
