package peer

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
)

// FuzzParseACL: an ACL file never panics the parser; its only error is a
// line too long to scan; every entry kept is ALL, an npub that decodes to
// a key in the set, or an alias; and the bound holds.
func FuzzParseACL(f *testing.F) {
	id, err := identity.Generate(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "ALL\n", "all # everyone\n", id.Npub() + "\n# c\n  gw  \n", "npub1bad\n\n\t\n", strings.Repeat("x", 5000)} {
		f.Add(s)
	}
	aliases := func(name string) (identity.PublicKey, bool) { return id.PublicKey(), name == "gw" }
	f.Fuzz(func(t *testing.T, in string) {
		l, err := ParseACL(strings.NewReader(in), aliases, func(line int, tok string, err error) {
			if line < 1 || tok == "" || err == nil {
				t.Fatalf("bad report line %d %q %v", line, tok, err)
			}
		})
		if err != nil {
			if !errors.Is(err, bufio.ErrTooLong) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(l.entries) > maxACLEntries {
			t.Fatalf("%d entries", len(l.entries))
		}
		for _, e := range l.entries {
			switch {
			case strings.EqualFold(e, "ALL"):
				if !l.all {
					t.Fatal("ALL entry without all")
				}
			case e == "gw":
			default:
				pk, err := identity.DecodeNpub(e)
				if err != nil {
					t.Fatalf("kept %q: %v", e, err)
				}
				if _, ok := l.keys[pk]; !ok {
					t.Fatalf("kept %q, key not in the set", e)
				}
			}
		}
	})
}
