package udp

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/logging"
)

// TestAdoptedStartLogged: a transport over an adopted (punched) socket
// starts with upstream's "UDP transport adopted existing socket"
// (local_addr, recv_buf, send_buf), not the bound transport's "UDP
// transport started".
func TestAdoptedStartLogged(t *testing.T) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	a, err := Adopt(5, "", conn, loopbackOpts(), slog.New(logging.New(&buf, logging.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), newSink().Deliver); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	out := buf.String()
	want := " INFO fips::transport::udp: UDP transport adopted existing socket transport=udp transport_id=5 local_addr=" + conn.LocalAddr().String() + " "
	if !strings.Contains(out, want) || !strings.Contains(out, " recv_buf=") || !strings.Contains(out, " send_buf=") ||
		strings.Contains(out, "UDP transport started") {
		t.Errorf("want %q with recv_buf and send_buf, and no start line, in:\n%s", want, out)
	}
}
