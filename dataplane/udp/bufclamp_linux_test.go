package udp

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/transport"
)

// TestBufferClampLogged: buffers larger than net.core.rmem_max/wmem_max
// allow are upstream's WARN "UDP recv buffer clamped by kernel (increase
// net.core.rmem_max)" and its send twin (requested, actual), under
// upstream's socket-setup target; the default request logs neither.
func TestBufferClampLogged(t *testing.T) {
	const huge = 1 << 30 // above any rmem_max/wmem_max a test host sets
	for _, c := range []struct {
		name  string
		size  int
		clamp bool
	}{{"huge", huge, true}, {"default", DefaultBufSize, false}} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := loopbackOpts()
			o.RecvBufSize, o.SendBufSize = c.size, c.size
			tr, err := New(1, "", o, slog.New(logging.New(&buf, logging.Options{})))
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Start(context.Background(), newSink().Deliver); err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			out := buf.String()
			for _, w := range []string{
				" WARN fips::transport::udp::io::unix: UDP recv buffer clamped by kernel (increase net.core.rmem_max) transport=udp transport_id=1 requested=1073741824 actual=",
				" WARN fips::transport::udp::io::unix: UDP send buffer clamped by kernel (increase net.core.wmem_max) transport=udp transport_id=1 requested=1073741824 actual=",
			} {
				if got := strings.Contains(out, w); got != c.clamp {
					t.Errorf("line %q logged: %v, want %v\n%s", w, got, c.clamp, out)
				}
			}
			if !c.clamp && strings.Contains(out, "clamped") {
				t.Errorf("default buffers reported clamped:\n%s", out)
			}
		})
	}
}

// TestGSORefusedLogged: when the kernel refuses a GSO send on the
// transport's socket, upstream's WARN "UDP_GSO refused by kernel;
// falling back to sendmmsg for life of process" (error) is logged once.
func TestGSORefusedLogged(t *testing.T) {
	var buf bytes.Buffer
	tr, err := New(1, "", loopbackOpts(), slog.New(logging.New(&buf, logging.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	// The 400 datagrams sent to ourselves below are discarded as they
	// arrive: a bounded sink would fill and hold the reader (and Close).
	discard := func(p transport.Packet) bool {
		if p.Buf != nil {
			p.Buf.Release()
		}
		return true
	}
	if err := tr.Start(context.Background(), discard); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	bc := tr.bc.Load()
	if bc == nil || !bc.GSO() {
		t.Skip("no UDP GSO on this kernel")
	}
	to := netip.MustParseAddrPort(tr.LocalAddr())
	for range 2 { // more segments than UDP_MAX_SEGMENTS: EINVAL
		if _, err := bc.WriteBatch([]Message{{Buf: make([]byte, 200*16), Addr: to, Segment: 16}}); err != nil {
			t.Fatal(err)
		}
	}
	const want = " WARN fips::node::encrypt_worker: UDP_GSO refused by kernel; falling back to sendmmsg for life of process transport=udp transport_id=1 error=invalid argument\n"
	if got := strings.Count(buf.String(), want); got != 1 {
		t.Errorf("%d %q lines, want 1:\n%s", got, want, buf.String())
	}
}
