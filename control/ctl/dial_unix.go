//go:build unix

package ctl

import (
	"context"
	"net"
)

func dial(ctx context.Context, socketPath string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, &ConnectError{Addr: socketPath, Err: err}
	}
	return c, nil
}
