package tun

import (
	"log/slog"
	"net/netip"

	wgtun "golang.zx2c4.com/wireguard/tun"
)

// Offset is the headroom wireguard/tun needs in front of each packet
// (the virtio-net header on Linux, the address family on macOS).
const Offset = 16

// MaxPacket is the largest packet the device reads or writes.
const MaxPacket = 65535

// Config is what an adapter is opened with.
type Config struct {
	Name string     // the interface name asked for
	MTU  int        // its MTU
	Addr netip.Addr // the node's fd00::/8 address, given to it as a /128
	// Log receives what does not stop the adapter (Linux: a policy rule
	// that cannot be added); nil discards it.
	Log *slog.Logger
}

// Device is an open, configured adapter.
type Device struct {
	// Dev reads and writes packets (Reader, Batch).
	Dev wgtun.Device
	// Name is the interface's name as the OS gave it.
	Name string
	// Index is its interface index, 0 when unknown.
	Index int

	cleanup func()
}

// NewDevice is a configured device; cleanup (may be nil) undoes what
// was set up beyond the device itself and runs once, on Close.
func NewDevice(dev wgtun.Device, name string, index int, cleanup func()) *Device {
	return &Device{Dev: dev, Name: name, Index: index, cleanup: cleanup}
}

// Close undoes what Open set up beyond the device (Linux: the policy
// rule; Windows: the route), then closes the device, which ends its
// Reader.
func (d *Device) Close() error {
	if d.cleanup != nil {
		d.cleanup()
		d.cleanup = nil
	}
	return d.Dev.Close()
}
