//go:build windows

package ctl

import (
	"log/slog"
	"net"
	"net/netip"
)

// listenPlatform binds 127.0.0.1:port, port parsed from path. Windows TCP
// has no filesystem ACL: any local user can connect.
func listenPlatform(path string, log *slog.Logger, _ func(string)) (net.Listener, string, string, error) {
	port, ok := ParsePort(path)
	if !ok {
		log.Warn("Invalid control port, using default", "path", path, "default", DefaultControlPort)
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port).String())
	if err != nil {
		return nil, "", "", err
	}
	log.Info("Control socket listening on localhost", "port", ln.Addr().(*net.TCPAddr).Port)
	return ln, ln.Addr().String(), "", nil
}

func removeSocketFile(string, *slog.Logger) {}

// CheckSocketPath has nothing to check on Windows: the control "path" is a
// TCP port.
func CheckSocketPath(string) error { return nil }

func chownFipsGroup(string, *slog.Logger) {}

// acceptPeer drops non-loopback peers (unreachable when bound to
// 127.0.0.1, checked anyway as upstream does).
func acceptPeer(c net.Conn, log *slog.Logger) bool {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		log.Warn("Rejected non-localhost control connection", "addr", c.RemoteAddr().String())
		return false
	}
	return true
}
