package transport

import (
	"errors"
	"testing"
)

// FuzzParseMAC: ParseMAC (config and control input) never panics, every
// refusal wraps ErrInvalidAddress, and what it accepts renders to the
// canonical form, which parses back to the same MAC.
func FuzzParseMAC(f *testing.F) {
	for _, s := range []string{"aa:bb:cc:dd:ee:ff", "AA:BB:CC:DD:EE:FF", "a:b:c:d:e:f", "+a:0b:00c:d:e:f",
		"aa-bb-cc-dd-ee-ff", "", ":::::", "aa:bb:cc:dd:ee:100", "aa:bb:cc:dd:ee:ff:00", "ff:ff:ff:ff:ff:ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMAC(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidAddress) {
				t.Fatalf("ParseMAC(%q): %v does not wrap ErrInvalidAddress", s, err)
			}
			return
		}
		again, err := ParseMAC(m.String())
		if err != nil || again != m {
			t.Fatalf("ParseMAC(%q) = %s, which parses back as %s, %v", s, m, again, err)
		}
	})
}
