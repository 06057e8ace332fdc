package udp

import (
	"net"
	"net/netip"
	"testing"
)

// The receive call itself must not allocate; the only per-packet
// allocation is the right-sized copy handed to the node.
func TestReceiveDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if haveDropCounter {
		if err := enableDropCounting(conn); err != nil {
			t.Fatal(err)
		}
	}
	to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	rx := newReceiver(conn)
	buf := make([]byte, 1500)
	pkt := make([]byte, 100)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := conn.WriteToUDPAddrPort(pkt, to); err != nil {
			t.Fatal(err)
		}
		if n, _, _, err := rx.recv(buf); err != nil || n != len(pkt) {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per send+receive", allocs)
	}
}
