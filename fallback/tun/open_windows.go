//go:build windows

package tun

import (
	"fmt"

	wgtun "golang.zx2c4.com/wireguard/tun"

	dptun "github.com/fips-go/fips/dataplane/tun"
)

// Open creates a wintun adapter (wintun.dll must sit beside fips.exe),
// gives it cfg.Addr as a /128 and routes fd00::/8 through it with netsh,
// as upstream does; Close deletes the route. Built and vetted in CI; not
// run there (no Windows host).
func Open(cfg dptun.Config) (*dptun.Device, error) {
	dev, err := wgtun.CreateTUN(cfg.Name, cfg.MTU)
	if err != nil {
		return nil, fmt.Errorf("create wintun adapter %q: %w", cfg.Name, err)
	}
	real, err := dev.Name()
	if err != nil {
		dev.Close()
		return nil, err
	}
	return configure(dev, real, windowsTUNCommands(real, cfg.Addr.String(), cfg.MTU),
		func() { _ = configCmd(windowsTUNCleanup(real)...) })
}
