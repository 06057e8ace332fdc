//go:build linux

package tun

import (
	"os"
	"testing"
)

func TestIPv6DisabledSysctl(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    bool
	}{{"1\n", true}, {"0\n", false}, {"", false}} {
		p := dir + "/disable_ipv6"
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ipv6Disabled(p); err != nil || got != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.content, got, err, tc.want)
		}
	}
	if _, err := ipv6Disabled(dir + "/missing"); err == nil {
		t.Error("a missing sysctl file read without error")
	}
}
