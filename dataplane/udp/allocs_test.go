package udp

import (
	"net"
	"net/netip"
	"testing"
)

// The batched receive call the read loop makes must not allocate.
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
	rx, err := Open(conn, RecvBatch)
	if err != nil {
		t.Fatal(err)
	}
	ms := []Message{{Buf: make([]byte, MaxMessage)}}
	pkt := make([]byte, 100)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := conn.WriteToUDPAddrPort(pkt, to); err != nil {
			t.Fatal(err)
		}
		if n, _, err := rx.ReadBatch(ms); err != nil || n != 1 || ms[0].N != len(pkt) {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per send+receive", allocs)
	}
}
