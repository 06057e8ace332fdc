//go:build !linux

package tcp

import "net"

// maxSegment: only Linux derives the link MTU from TCP_MAXSEG, as upstream.
func maxSegment(*net.TCPConn) int { return 0 }
