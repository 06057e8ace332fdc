// Command gensum writes bpf/sources.sha256 after bpf2go has run; see
// package srcsum. Usage: gensum OUTPUT...
package main

import (
	"fmt"
	"os"

	"github.com/fips-go/fips/bpf/internal/srcsum"
)

func main() {
	b, err := srcsum.Render(".", os.Args[1:])
	if err == nil {
		err = os.WriteFile(srcsum.FileName, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensum:", err)
		os.Exit(1)
	}
}
