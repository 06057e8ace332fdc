//go:build windows

package config

// DefaultControlSocketPath is node.control.socket_path's default: on
// Windows a localhost TCP port.
func DefaultControlSocketPath() string { return "21210" }

// DefaultAPISocketPath is empty: the native API is not built on Windows.
func DefaultAPISocketPath() string { return "" }

// DefaultGatewaySocketPath is the gateway control port placeholder.
func DefaultGatewaySocketPath() string { return "21211" }
