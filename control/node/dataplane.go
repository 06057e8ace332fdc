package node

import (
	"fmt"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane"
	"github.com/fips-go/fips/dataplane/xdp"
)

// DataplaneOptions are dataplane.* from fips.yaml (see dataplane.Options).
type DataplaneOptions = dataplane.Options

// startDataplane runs once the transports are up: the XDP programs and
// AF_XDP sockets as dataplane.mode says (dataplane/xdp). In xdp mode a
// failure is returned and the node does not start.
func (n *Node) startDataplane() error {
	ts := make([]transport.Transport, 0, len(n.order))
	for _, id := range n.order {
		ts = append(ts, n.transports[id])
	}
	v, p, err := xdp.Start(n.opts.Dataplane, xdp.Env{Log: n.log, Transports: ts, Engine: n.eng, Loop: inbox{n}})
	if err != nil {
		return err
	}
	n.dataplane = v
	if p != nil {
		n.xdp.Store(p)
	}
	return nil
}

// stopDataplane detaches and unloads the programs.
func (n *Node) stopDataplane() {
	if p := n.xdp.Swap(nil); p != nil {
		p.Stop()
	}
}

// IndexAdded implements peer.IndexObserver: established frames with idx
// pass XDP from now on.
func (n *Node) IndexAdded(t transport.ID, idx uint32) {
	if p := n.xdp.Load(); p != nil {
		p.IndexAdded(t, idx)
	}
}

// IndexRemoved implements peer.IndexObserver: idx is dropped in XDP again.
func (n *Node) IndexRemoved(t transport.ID, idx uint32) {
	if p := n.xdp.Load(); p != nil {
		p.IndexRemoved(t, idx)
	}
}

// BPF reads the XDP program's counters and maps now (show_bpf); it is
// safe from any goroutine (the maps are the kernel's).
func (n *Node) BPF() (ctl.BPFView, error) {
	v := ctl.BPFView{DataplaneView: n.LiveSnapshot().Dataplane, Counters: []ctl.XDPCounter{}, TCCounters: []ctl.TCCounter{}, XSKs: []ctl.XSKView{}}
	if p := n.xdp.Load(); p != nil {
		if err := p.Fill(&v); err != nil {
			return v, fmt.Errorf("show_bpf: %w", err)
		}
	}
	return v, nil
}
