//go:build !linux

package udp

import (
	"net"
	"net/netip"
)

// haveDropCounter: only Linux has SO_RXQ_OVFL.
const haveDropCounter = false

func enableDropCounting(*net.UDPConn) error { return nil }

// receiver reads datagrams with recvfrom.
type receiver struct{ conn *net.UDPConn }

func newReceiver(conn *net.UDPConn) *receiver { return &receiver{conn: conn} }

func (r *receiver) recv(buf []byte) (int, netip.AddrPort, uint64, error) {
	n, from, err := r.conn.ReadFromUDPAddrPort(buf)
	return n, from, 0, err
}
