//go:build linux

package udp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/transport"
)

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	l := unix.CmsgLen(len(data))
	if unix.SizeofCmsghdr == 16 {
		binary.NativeEndian.PutUint64(b, uint64(l))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(l))
	}
	binary.NativeEndian.PutUint32(b[unix.SizeofCmsghdr-8:], uint32(level))
	binary.NativeEndian.PutUint32(b[unix.SizeofCmsghdr-4:], uint32(typ))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestParseRXQOverflow(t *testing.T) {
	ctr := binary.NativeEndian.AppendUint32(nil, 0xdeadbeef)
	ovfl := cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, ctr)
	other := cmsg(unix.SOL_IPV6, unix.IPV6_PKTINFO, make([]byte, 20))

	// Cross-check the layout against x/sys's own parser.
	msgs, err := unix.ParseSocketControlMessage(append(append([]byte{}, other...), ovfl...))
	if err != nil || len(msgs) != 2 || msgs[1].Header.Type != unix.SO_RXQ_OVFL || !bytes.Equal(msgs[1].Data, ctr) {
		t.Fatalf("layout check: %v %+v", err, msgs)
	}

	for name, tc := range map[string]struct {
		b    []byte
		want uint32
		ok   bool
	}{
		"alone":       {ovfl, 0xdeadbeef, true},
		"after other": {append(append([]byte{}, other...), ovfl...), 0xdeadbeef, true},
		"other only":  {other, 0, false},
		"empty":       {nil, 0, false},
		"truncated":   {ovfl[:unix.CmsgLen(0)+2], 0, false},
	} {
		got, ok := parseRXQOverflow(tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %#x %v", name, got, ok)
		}
	}
}

// TestKernelDrops overflows a tiny receive buffer while the receive loop
// is held inside Deliver, then checks the SO_RXQ_OVFL count arrives.
func TestKernelDrops(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSink()
	first := true
	s.Accept = func(transport.Packet) bool {
		if first {
			first = false
			close(entered)
			<-release
		}
		return true
	}
	o := loopbackOpts()
	o.RecvBufSize = 1 // the kernel rounds up to its minimum, a few KiB
	b := start(t, 1, o, s)
	raw := rawSender(t)
	to := addrOf(t, b)

	rawSend(t, raw, to, msg1(t, 0))
	<-entered
	for range 64 {
		rawSend(t, raw, to, bytes.Repeat([]byte{1}, 1000))
	}
	close(release)
	// Drain what fit. Each packet read frees room, so a marker sent then
	// is queued; it carries the drop count the kernel recorded meanwhile.
	marker := msg1(t, 0xee)
	rawSend(t, raw, to, marker) // may itself be dropped if nothing was read yet
	for {
		p := s.Next(t)
		if bytes.Equal(p.Data, marker) {
			break
		}
		rawSend(t, raw, to, marker)
	}
	st := b.Stats()
	if st.KernelDrops == 0 || st.KernelDrops > 65 {
		t.Fatalf("kernel drops %d: %+v", st.KernelDrops, st)
	}
	t.Logf("received %d, kernel drops %d", st.PacketsRecv, st.KernelDrops)
}
