package udp

import (
	"fmt"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReceiveOuterECN: the outer ECN codepoint a sender set with IP_TOS /
// IPV6_TCLASS reaches Message.ECN on an IPv4 socket, an IPv6 socket and,
// for an IPv4 sender, a dual-stack socket.
func TestReceiveOuterECN(t *testing.T) {
	for _, tc := range []struct {
		name, rxNet, rxAddr, txNet, txAddr string
		v6                                 bool
	}{
		{"ipv4", "udp4", "127.0.0.1:0", "udp4", "127.0.0.1", false},
		{"ipv6", "udp6", "[::1]:0", "udp6", "::1", true},
		{"dual-stack from ipv4", "udp", "[::]:0", "udp4", "127.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx, err := net.ListenUDP(tc.rxNet, &net.UDPAddr{IP: net.ParseIP(tc.rxAddr[:len(tc.rxAddr)-2])})
			if err != nil {
				t.Fatal(err)
			}
			defer rx.Close()
			c, err := Open(rx, 8)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := net.DialUDP(tc.txNet, nil, &net.UDPAddr{IP: net.ParseIP(tc.txAddr), Port: rx.LocalAddr().(*net.UDPAddr).Port})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			raw, err := tx.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			ms := make([]Message, 1)
			ms[0].Buf = make([]byte, MaxMessage)
			for _, tos := range []int{0x00, 0xb8 | ECNECT0, ECNECT1, 0x20 | ECNCE, ECNCE} {
				var serr error
				_ = raw.Control(func(fd uintptr) {
					if tc.v6 {
						serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos)
					} else {
						serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, tos)
					}
				})
				if serr != nil {
					t.Fatal(serr)
				}
				if _, err := tx.Write([]byte(fmt.Sprintf("tos %#x", tos))); err != nil {
					t.Fatal(err)
				}
				_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _, err := c.ReadBatch(ms)
				if err != nil || n != 1 {
					t.Fatalf("ReadBatch: %d, %v", n, err)
				}
				if got, want := ms[0].ECN, uint8(tos&3); got != want {
					t.Errorf("TOS %#x: ECN %d, want %d", tos, got, want)
				}
			}
		})
	}
}
