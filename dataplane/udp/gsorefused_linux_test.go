package udp

import (
	"errors"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGSORefusedReported: a GSO message the kernel refuses (more
// segments than UDP_MAX_SEGMENTS, 64 or 128 by kernel: EINVAL) turns GSO off, is still sent
// datagram by datagram, and SetGSORefused's function hears of it once
// with the kernel's error, however many refusals follow.
func TestGSORefusedReported(t *testing.T) {
	a, b := pair(t, "udp4", "127.0.0.1:0")
	c, err := Open(a, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !c.GSO() {
		t.Skip("this kernel offers no UDP GSO to refuse") // nothing to fall back from
	}
	var refusals []error
	c.SetGSORefused(func(err error) { refusals = append(refusals, err) })
	to := b.LocalAddr().(*net.UDPAddr).AddrPort()
	const segs, size = 200, 16
	for range 2 {
		buf := make([]byte, segs*size)
		if sent, err := c.WriteBatch([]Message{{Buf: buf, Addr: to, Segment: size}}); err != nil || sent != segs {
			t.Fatalf("sent %d of %d: %v", sent, segs, err)
		}
	}
	if c.GSO() {
		t.Error("GSO still on after a refusal")
	}
	if len(refusals) != 1 || !errors.Is(refusals[0], unix.EINVAL) {
		t.Errorf("refusals reported: %v, want one EINVAL", refusals)
	}
}
