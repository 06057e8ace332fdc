package bench

import "fmt"

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
