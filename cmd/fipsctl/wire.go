package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/fips-go/fips/control/wire/dissect"
)

// maxHexInput bounds what `wire decode` reads from stdin: twice the largest
// FMP packet plus generous room for whitespace.
const maxHexInput = 4 * 65536

func runWire(e *env, args []string) error {
	if len(args) == 0 || args[0] != "decode" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(e.stdout, "usage: fipsctl wire decode [--layer fmp|fsp] [--inner fmp|fsp|fmp-next|fsp-next] [HEX]")
			return nil
		}
		return usageError{msg: "a subcommand is required", usage: "wire decode [--layer fmp|fsp] [--inner fmp|fsp|fmp-next|fsp-next] [HEX]"}
	}
	fs := newFlags(e, "wire decode", "[--layer fmp|fsp] [--inner fmp|fsp|fmp-next|fsp-next] [HEX]")
	inner := fs.String("inner", "", "input is a decrypted plaintext: fmp (link frame) or fsp (session message); fmp-next, fsp-next: of upstream next's line (a version-1 link, an XX session)")
	layer := fs.String("layer", "", "outer packet layer: fmp or fsp (default: try FMP, then FSP)")
	if err := fs.parse(args[1:]); err != nil {
		return err
	}
	var l dissect.Layer
	switch {
	case *inner != "" && *layer != "":
		return usageError{msg: "--inner and --layer are exclusive", usage: fs.Name() + " " + fs.synopsis}
	case *inner == "fmp":
		l = dissect.FMPInner
	case *inner == "fsp":
		l = dissect.FSPInner
	case *inner == "fmp-next":
		l = dissect.FMPInnerNext
	case *inner == "fsp-next":
		l = dissect.FSPInnerNext
	case *inner != "":
		return usageError{msg: fmt.Sprintf("--inner must be fmp, fsp, fmp-next or fsp-next, not %q", *inner), usage: fs.Name() + " " + fs.synopsis}
	case *layer == "fmp", *layer == "fsp":
		l = dissect.Layer(*layer)
	case *layer != "":
		return usageError{msg: fmt.Sprintf("--layer must be fmp or fsp, not %q", *layer), usage: fs.Name() + " " + fs.synopsis}
	}
	var text string
	switch fs.NArg() {
	case 0:
		b, err := io.ReadAll(io.LimitReader(e.stdin, maxHexInput+1))
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if len(b) > maxHexInput {
			return fmt.Errorf("input longer than %d characters", maxHexInput)
		}
		text = string(b)
	case 1:
		text = fs.Arg(0)
	default:
		return usageError{msg: fmt.Sprintf("unexpected argument '%s' found", fs.Arg(1)), usage: fs.Name() + " " + fs.synopsis}
	}
	pkt, err := parseHex(text)
	if err != nil {
		return err
	}
	v, err := dissect.Decode(pkt, l)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseHex accepts hex with optional 0x prefix, whitespace, ':' or '-'
// separators (as copied from tcpdump, Wireshark or a hexdump).
func parseHex(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	clean := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r', ':', '-':
			return -1
		}
		return r
	}, s)
	if clean == "" {
		return nil, fmt.Errorf("no hex input")
	}
	if len(clean)%2 != 0 {
		return nil, fmt.Errorf("hex input has an odd number of digits (%d)", len(clean))
	}
	b, err := hex.DecodeString(clean)
	if err != nil {
		return nil, fmt.Errorf("invalid hex input: %v", err)
	}
	return b, nil
}
