//go:build unix

package config

import "os"

// DefaultControlSocketPath is node.control.socket_path's default, resolved
// now (see DefaultSocketPath).
func DefaultControlSocketPath() string { return DefaultSocketPath("control.sock") }

// DefaultAPISocketPath is node.native_api.socket_path's default.
func DefaultAPISocketPath() string { return DefaultSocketPath("api.sock") }

// DefaultGatewaySocketPath is where clients look for fips-gateway's
// control socket.
func DefaultGatewaySocketPath() string { return DefaultSocketPath("gateway.sock") }

// DefaultSocketPath resolves a socket file name against, in order,
// /run/fips, /var/run/fips (macOS and FreeBSD), $XDG_RUNTIME_DIR/fips and
// /tmp/fips-<name>, taking the first directory that exists.
func DefaultSocketPath(filename string) string {
	consult, create := varRunPolicy()
	return resolveSocket(filename, consult, create, os.Getenv("XDG_RUNTIME_DIR"), func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.IsDir()
	})
}
