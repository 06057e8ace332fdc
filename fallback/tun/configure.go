//go:build darwin || windows

package tun

import (
	"fmt"
	"net"
	"os/exec"
	"strings"

	wgtun "golang.zx2c4.com/wireguard/tun"

	dptun "github.com/fips-go/fips/dataplane/tun"
)

// configCmd runs one interface configuration command (ifconfig/route on
// macOS, netsh on Windows, as upstream configures them) and folds its
// output into the error.
func configCmd(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// configure runs the commands that give device real (dev) its address,
// MTU and route, closing the device if one fails, and records its
// interface index; cleanup (may be nil) runs on the device's Close.
func configure(dev wgtun.Device, real string, cmds [][]string, cleanup func()) (*dptun.Device, error) {
	for _, c := range cmds {
		if err := configCmd(c...); err != nil {
			dev.Close()
			return nil, fmt.Errorf("TUN %s: %w", real, err)
		}
	}
	index := 0
	if ifc, err := net.InterfaceByName(real); err == nil {
		index = ifc.Index
	}
	return dptun.NewDevice(dev, real, index, cleanup), nil
}
