// Package fallback holds the portable packet I/O the engine uses where the
// Linux fast paths are unavailable: plain-socket UDP I/O, one datagram per
// call, that the UDP transport (dataplane/udp) runs on off Linux
// (fallback/udp); the TCP transport (fallback/tcp) and the Tor transport
// that runs on it (fallback/tor); TUN on each OS
// (fallback/tun: macOS utun, Windows wintun; read and written with
// dataplane/tun's Reader and Batch); and BLE. Everything here must build
// on Linux, macOS and Windows.
package fallback
