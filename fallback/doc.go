// Package fallback holds the portable packet I/O the engine uses where the
// Linux fast paths are unavailable: plain UDP and TCP sockets, TUN on each
// OS, and BLE. Everything here must build on Linux, macOS and Windows.
package fallback
