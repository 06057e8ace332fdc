package udp

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
)

// TestReadWrite: a datagram written to a socket's address is read back
// whole, with the writer's address as its source; a closed socket's Read
// fails with net.ErrClosed.
func TestReadWrite(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			listen := func() *net.UDPConn {
				c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
				if err != nil {
					t.Skip(err) // no IPv6 loopback here
				}
				return c
			}
			ac, bc := listen(), listen()
			defer ac.Close()
			a, b := Open(ac), Open(bc)
			to := bc.LocalAddr().(*net.UDPAddr).AddrPort()
			want := []byte("one datagram")
			if err := a.Write(want, to); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, from, err := b.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf[:n], want) {
				t.Errorf("read %q, want %q", buf[:n], want)
			}
			if src := ac.LocalAddr().(*net.UDPAddr).AddrPort(); from != src {
				t.Errorf("from %v, want %v", from, src)
			}
			bc.Close()
			if _, _, err := b.Read(buf); !errors.Is(err, net.ErrClosed) {
				t.Errorf("read on a closed socket: %v, want net.ErrClosed", err)
			}
		})
	}
}
