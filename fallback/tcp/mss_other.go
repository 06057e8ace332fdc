//go:build !linux

package tcp

import "net"

// maxSegment: only Linux derives the link MTU from TCP_MAXSEG, as upstream.
func maxSegment(*net.TCPConn) int { return 0 }

// waitingMsg1: only Linux peeks; elsewhere a connection whose msg1
// waits unread is ranked by whether its read loop has run.
func waitingMsg1(net.Conn) bool { return false }
