//go:build linux

package udp

import (
	"bytes"
	"testing"

	"github.com/fips-go/fips/control/transport"
)

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
