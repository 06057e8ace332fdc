//go:build windows

package ctl

// DefaultSocketPath is, on Windows, the control port on 127.0.0.1 as a
// string ("21210"), as upstream's node.control.socket_path default.
func DefaultSocketPath() string { return "21210" }
