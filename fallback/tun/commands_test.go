package tun

import (
	"slices"
	"strings"
	"testing"
)

// The macOS and Windows adapters cannot run here; their configuration
// commands are checked against upstream's (src/upper/tun.rs), word for
// word.
func TestTUNConfigurationCommandsMatchUpstream(t *testing.T) {
	join := func(cmds [][]string) []string {
		var out []string
		for _, c := range cmds {
			out = append(out, strings.Join(c, " "))
		}
		return out
	}
	addr := "fd12:3456::1"
	if got, want := join(darwinTUNCommands("utun7", addr, 1280)), []string{
		"ifconfig utun7 inet6 fd12:3456::1 prefixlen 128",
		"ifconfig utun7 mtu 1280",
		"ifconfig utun7 up",
		"route add -inet6 -prefixlen 8 fd00:: -interface utun7",
	}; !slices.Equal(got, want) {
		t.Errorf("macOS:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := join(windowsTUNCommands("fips0", addr, 1400)), []string{
		"netsh interface ipv6 add address fips0 fd12:3456::1/128",
		"netsh interface ipv6 set subinterface fips0 mtu=1400",
		"netsh interface ipv6 add route fd00::/8 fips0",
	}; !slices.Equal(got, want) {
		t.Errorf("Windows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := strings.Join(windowsTUNCleanup("fips0"), " "); got != "netsh interface ipv6 delete route fd00::/8 interface=fips0" {
		t.Errorf("Windows cleanup: %s", got)
	}
}
