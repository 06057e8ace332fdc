//go:build !linux

package ethernet

import (
	"fmt"
	"runtime"
)

// Supported: only Linux has an AF_PACKET socket here (upstream's macOS
// BPF device is not ported).
const Supported = false

func openLink(iface string, _ uint16, _, _ int) (link, error) {
	return nil, fmt.Errorf("ethernet: transport on %s is not supported on %s (Linux only)", iface, runtime.GOOS)
}
