package tun

import "strconv"

// The commands that configure the adapter where there is no netlink, as
// upstream runs them (src/upper/tun.rs). Built on every OS so they are
// tested where CI runs; used by open_darwin.go and open_windows.go.

// darwinTUNCommands gives utun device name the address as a /128, sets
// its MTU, brings it up and routes fd00::/8 through it.
func darwinTUNCommands(name, addr string, mtu int) [][]string {
	return [][]string{
		{"ifconfig", name, "inet6", addr, "prefixlen", "128"},
		{"ifconfig", name, "mtu", strconv.Itoa(mtu)},
		{"ifconfig", name, "up"},
		{"route", "add", "-inet6", "-prefixlen", "8", "fd00::", "-interface", name},
	}
}

// windowsTUNCommands gives wintun adapter name the address as a /128,
// sets its MTU and routes fd00::/8 through it.
func windowsTUNCommands(name, addr string, mtu int) [][]string {
	return [][]string{
		{"netsh", "interface", "ipv6", "add", "address", name, addr + "/128"},
		{"netsh", "interface", "ipv6", "set", "subinterface", name, "mtu=" + strconv.Itoa(mtu)},
		{"netsh", "interface", "ipv6", "add", "route", "fd00::/8", name},
	}
}

// windowsTUNCleanup removes the route at shutdown.
func windowsTUNCleanup(name string) []string {
	return []string{"netsh", "interface", "ipv6", "delete", "route", "fd00::/8", "interface=" + name}
}
