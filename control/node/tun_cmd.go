//go:build darwin || windows

package node

import (
	"fmt"
	"net"
	"os/exec"
	"strings"

	"golang.zx2c4.com/wireguard/tun"
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

// configureTUN runs the commands that give device real (dev) its address,
// MTU and route, closing the device if one fails, then records its
// interface index.
func (n *Node) configureTUN(dev tun.Device, real string, cmds [][]string) (tun.Device, string, error) {
	for _, c := range cmds {
		if err := configCmd(c...); err != nil {
			dev.Close()
			return nil, "", fmt.Errorf("TUN %s: %w", real, err)
		}
	}
	if ifc, err := net.InterfaceByName(real); err == nil {
		n.tunIndex.Store(int64(ifc.Index))
	}
	return dev, real, nil
}
