//go:build !linux

package main

import (
	"fmt"
	"os"
)

// Version is set at link time (-ldflags "-X main.Version=...").
var Version = "0.1.0-dev"

// main refuses, as upstream does off Linux, before reading any flag.
func main() {
	fmt.Fprintln(os.Stderr, "fips-gateway requires Linux (nftables unavailable on this platform)")
	os.Exit(1)
}
