//go:build unix

package config

import "github.com/fips-go/fips/control/ctl"

// DefaultControlSocketPath is node.control.socket_path's default, resolved
// now (see DefaultSocketPath).
func DefaultControlSocketPath() string { return DefaultSocketPath("control.sock") }

// DefaultAPISocketPath is node.native_api.socket_path's default.
func DefaultAPISocketPath() string { return DefaultSocketPath("api.sock") }

// DefaultGatewaySocketPath is where clients look for fips-gateway's
// control socket.
func DefaultGatewaySocketPath() string { return DefaultSocketPath("gateway.sock") }

// DefaultSocketPath resolves a socket file name exactly as the control
// socket's clients do (ctl.ResolveSocketPath): /run/fips, /var/run/fips
// (macOS and FreeBSD), $XDG_RUNTIME_DIR/fips, /tmp/fips-<name>.
func DefaultSocketPath(filename string) string {
	return ctl.ResolveSocketPath(filename, ctl.HostPathEnv())
}
