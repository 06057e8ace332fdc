//go:build windows

package ctl

import (
	"context"
	"net"
	"strconv"
)

func dial(ctx context.Context, socketPath string) (net.Conn, error) {
	port, _ := ParsePort(socketPath)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &ConnectError{Addr: addr, Err: err}
	}
	return c, nil
}
