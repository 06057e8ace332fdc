package ipv6

import "testing"

func TestEffectiveMTUAndMaxMSS(t *testing.T) {
	cases := []struct {
		transport, eff int
		mss            uint16
	}{
		{1280, 1203, 1143}, // shipped default
		{1472, 1395, 1335},
		{1357, 1280, 1220}, // IPv6-clean threshold
		{1500, 1423, 1363},
		{137, 60, 0},
		{138, 61, 1},
		{77, 0, 0},
		{50, 0, 0},
		{-1, 0, 0},
		{1 << 20, 1<<20 - 77, 0xffff},
	}
	for _, c := range cases {
		if got := EffectiveMTU(c.transport); got != c.eff {
			t.Errorf("EffectiveMTU(%d)=%d want %d", c.transport, got, c.eff)
		}
		if got := MaxMSS(c.transport); got != c.mss {
			t.Errorf("MaxMSS(%d)=%d want %d", c.transport, got, c.mss)
		}
	}
}
