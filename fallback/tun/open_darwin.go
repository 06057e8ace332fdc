//go:build darwin

package tun

import (
	"fmt"
	"strings"

	wgtun "golang.zx2c4.com/wireguard/tun"

	dptun "github.com/fips-go/fips/dataplane/tun"
)

// Open creates a utun device (macOS picks its number: cfg.Name is
// honoured only when it is "utun" or "utunN"), gives it cfg.Addr as a
// /128 and routes fd00::/8 through it with ifconfig and route, as
// upstream does. Built and vetted in CI; not run there (no macOS host).
func Open(cfg dptun.Config) (*dptun.Device, error) {
	req := "utun"
	if strings.HasPrefix(cfg.Name, "utun") {
		req = cfg.Name
	}
	dev, err := wgtun.CreateTUN(req, cfg.MTU)
	if err != nil {
		return nil, fmt.Errorf("create TUN %q: %w", req, err)
	}
	real, err := dev.Name()
	if err != nil {
		dev.Close()
		return nil, err
	}
	return configure(dev, real, darwinTUNCommands(real, cfg.Addr.String(), cfg.MTU), nil)
}
