package node

import (
	"strings"
	"testing"

	"github.com/fips-go/fips/control/transport"
)

// ifaceTransport is a transport of a type, name and interface; only
// what transportForAddr asks of it is implemented.
type ifaceTransport struct {
	transport.Transport
	id               transport.ID
	typ, name, iface string
}

func (f ifaceTransport) ID() transport.ID  { return f.id }
func (f ifaceTransport) Type() string      { return f.typ }
func (f ifaceTransport) Name() string      { return f.name }
func (f ifaceTransport) Interface() string { return f.iface }

// TestTransportForEthernetAddr: an unqualified "ethernet" address picks
// the instance on the interface it names ("eth1/aa:…"), as upstream's
// resolve_ethernet_addr; a qualified one picks the instance by name; an
// interface no instance runs on is refused with upstream's wording.
func TestTransportForEthernetAddr(t *testing.T) {
	n := &Node{transports: map[transport.ID]transport.Transport{}}
	for _, f := range []ifaceTransport{{id: 1, typ: "udp"}, {id: 2, typ: "ethernet", name: "a", iface: "eth0"}, {id: 3, typ: "ethernet", name: "b", iface: "eth1"}} {
		n.transports[f.id] = f
		n.order = append(n.order, f.id)
	}
	for _, c := range []struct {
		sel, addr string
		want      transport.ID
	}{
		{"ethernet", "eth1/aa:bb:cc:dd:ee:ff", 3},
		{"ethernet", "eth0/aa:bb:cc:dd:ee:ff", 2},
		{"ethernet", "aa:bb:cc:dd:ee:ff", 2}, // no interface: the first
		{"ethernet/b", "eth0/aa:bb:cc:dd:ee:ff", 3},
		{"udp", "192.0.2.1:2121", 1},
	} {
		tr, err := n.transportForAddr(c.sel, c.addr)
		if err != nil || tr.ID() != c.want {
			t.Errorf("%s %s: %v, %v; want transport %d", c.sel, c.addr, tr, err, c.want)
		}
	}
	if _, err := n.transportForAddr("ethernet", "wlan0/aa:bb:cc:dd:ee:ff"); err == nil || !strings.Contains(err.Error(), "no operational Ethernet transport for interface 'wlan0'") {
		t.Errorf("unknown interface: %v", err)
	}
}
