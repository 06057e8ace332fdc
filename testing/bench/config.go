package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Config is one bench run's shape.
type Config struct {
	// Quick is the development subset: transit only, 1 stream, 1
	// repetition, no UDP sweep beyond one run, and of the Ethernet
	// systems the socket path alone (builders' full flag).
	Quick bool
	// Repetitions per figure (default 3; 1 when Quick).
	Repetitions int
	// Seconds per iperf3 run (default 5).
	Seconds int
	// Topologies to run (default Topologies; transit when Quick).
	Topologies []Topology
	// Underlays to run every topology on, in order (default Underlays:
	// the veths as created, then wire-like). A quick run measures the
	// wire underlay on a subset of the systems (builder.quickWire).
	Underlays []Underlay
	// Upstream is a folder holding upstream FIPS's fips and fipsctl: when
	// set, SystemUpstream is measured beside fips-go (BENCH_UPSTREAM).
	Upstream string
	// Command is how the run was started, for the report.
	Command string
	// Log receives progress lines.
	Log func(string)
}

// UDPRate and UDPPayload are the UDP load: 1 Gbit/s offered in
// datagrams small enough for every path's MTU (fips-go's mesh MTU over a
// 1500-byte underlay is 1203).
const (
	UDPRate    = "1G"
	UDPPayload = 1100
)

func (c *Config) defaults() {
	if c.Repetitions <= 0 {
		c.Repetitions = 3
		if c.Quick {
			c.Repetitions = 1
		}
	}
	if c.Seconds <= 0 {
		c.Seconds = 5
	}
	if len(c.Topologies) == 0 {
		c.Topologies = Topologies
		if c.Quick {
			c.Topologies = []Topology{{TopoTransit, 3}}
		}
	}
	if len(c.Underlays) == 0 {
		c.Underlays = Underlays
	}
	if c.Log == nil {
		c.Log = func(s string) { fmt.Println(s) }
	}
}

// Topology is a line of nodes: 2 (direct), 3 (transit: one relay) or 5.
type Topology struct {
	Name  string
	Nodes int
}

// Topologies are the ones `make bench` measures, in order.
var Topologies = []Topology{{TopoDirect, 2}, {TopoTransit, 3}, {TopoLine, 5}}

// Underlay is how the veths between the nodes carry frames.
type Underlay string

const (
	// UnderlayDefault is the veths as `ip link add` makes them: segmentation
	// offloads on, so a GSO super-packet (up to 64 KB of TCP segments or
	// UDP datagrams) crosses a veth as one skb, which no physical link does.
	// Its results keep the JSON shape of the runs before underlays existed
	// (no "underlay" key).
	UnderlayDefault Underlay = "default"
	// UnderlayWire turns off, on every veth end, every offload that lets a
	// frame larger than the MTU cross (WireOffload): the sender segments
	// in software before the veth, as for a NIC, and the receiver takes
	// MTU-sized frames, for every system alike.
	UnderlayWire Underlay = "wire"
)

// Underlays are the ones `make bench` measures, in order.
var Underlays = []Underlay{UnderlayDefault, UnderlayWire}

// ParseUnderlays parses a comma-separated list of underlay names.
func ParseUnderlays(s string) ([]Underlay, error) {
	var out []Underlay
	for _, f := range strings.Split(s, ",") {
		u := Underlay(strings.TrimSpace(f))
		if !slices.Contains(Underlays, u) {
			return nil, fmt.Errorf("bench: unknown underlay %q (want %v)", u, Underlays)
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out, nil
}
