//go:build !(linux || darwin || freebsd)

// Command native-echo needs the native datagram API, which passes
// descriptors with SCM_RIGHTS: not on this platform.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "native-echo: the native datagram API is not available on this platform")
	os.Exit(1)
}
