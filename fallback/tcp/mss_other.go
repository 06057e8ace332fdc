//go:build !linux

package tcp

import "net"

// maxSegment: only Linux derives the link MTU from TCP_MAXSEG, as upstream.
func maxSegment(*net.TCPConn) int { return 0 }

// unreadBytes: only Linux tells (SIOCINQ); elsewhere a connection whose
// first bytes wait unread is evicted as if silent.
func unreadBytes(net.Conn) int { return 0 }
