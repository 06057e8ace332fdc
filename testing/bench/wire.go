package bench

import (
	"slices"
	"strings"
)

// WireOffload reports whether the wire-like underlay turns the `ethtool
// -k` feature name off: every transmit segmentation offload (with one of
// them on, the veth takes a super-packet whole and its peer receives it
// as one skb) and every receive coalescing (GRO, GRO lists, LRO), so
// what crosses a veth and what the receiver's stack sees are frames of
// at most the MTU.
func WireOffload(name string) bool {
	switch name {
	case "generic-segmentation-offload", "generic-receive-offload", "large-receive-offload",
		"rx-gro-hw", "rx-gro-list", "rx-udp-gro-forwarding", "tx-gso-list":
		return true
	}
	return strings.HasPrefix(name, "tx-") && strings.HasSuffix(name, "-segmentation")
}

// Feature is one line of `ethtool -k`.
type Feature struct {
	On, Fixed bool
}

// ParseFeatures reads `ethtool -k` output: "name: on|off [fixed]" lines
// (indented sub-features too; the header line is skipped).
func ParseFeatures(out string) map[string]Feature {
	fs := map[string]Feature{}
	for _, l := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || strings.HasPrefix(l, "Features for ") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || (f[0] != "on" && f[0] != "off") {
			continue
		}
		fs[name] = Feature{On: f[0] == "on", Fixed: strings.Contains(rest, "[fixed]")}
	}
	return fs
}

// WireOffloadsOn lists the WireOffload features that are on in fs.
func WireOffloadsOn(fs map[string]Feature) []string {
	var on []string
	for name, f := range fs {
		if WireOffload(name) && f.On {
			on = append(on, name)
		}
	}
	slices.Sort(on)
	return on
}
