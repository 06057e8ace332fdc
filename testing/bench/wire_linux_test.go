//go:build linux

package bench

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// linkMTU is ifname's MTU in namespace ns.
func linkMTU(t *testing.T, ns, ifname string) uint64 {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-j", "link", "show", "dev", ifname).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show %s: %v\n%s", ifname, err, out)
	}
	var links []struct {
		MTU uint64 `json:"mtu"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 || links[0].MTU == 0 {
		t.Fatalf("ip -j link show %s: %v: %s", ifname, err, out)
	}
	return links[0].MTU
}

// TestWireUnderlay builds the direct pair on each underlay and sends a
// bulk transfer from a to b: the kernel's TCP, and fips-go's socket path
// (UDP with UDP_SEGMENT). On the wire underlay every veth end must have
// every WireOffload feature off, and a tcx counter on b's veth ingress
// must see no skb longer than the MTU plus the Ethernet header and none
// carrying several segments. On the default underlay the same counter
// must see the kernel's TCP cross in super-packets, so the check can
// tell the two apart.
func TestWireUnderlay(t *testing.T) {
	topo := Topology{TopoDirect, 2}
	o := binaries(t)
	for _, system := range []struct {
		name  string
		build func(*testing.T, BuildOptions) *Path
	}{
		{SystemKernel, func(t *testing.T, o BuildOptions) *Path { return BuildKernel(t, topo, o) }},
		{SystemFips, func(t *testing.T, o BuildOptions) *Path { return BuildFips(t, topo, o) }},
	} {
		for _, u := range Underlays {
			t.Run(system.name+"/"+string(u), func(t *testing.T) {
				o := o
				o.Underlay = u
				p := system.build(t, o)
				links := p.Mesh.Links()
				for _, e := range linkEnds(links) {
					fs, err := Features(e[0], e[1])
					if err != nil {
						t.Fatal(err)
					}
					on := WireOffloadsOn(fs)
					switch {
					case u == UnderlayWire && len(on) > 0:
						t.Errorf("%s: wire underlay with %v on", e[1], on)
					case u == UnderlayDefault && !fs["tx-tcp-segmentation"].On:
						t.Errorf("%s: default underlay with TSO off: %v", e[1], fs["tx-tcp-segmentation"])
					}
				}
				l := links[0]
				mtu := linkMTU(t, l.B.NS, l.IfB)
				c, err := CountFrames(l.B.NS, l.IfB)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				out := map[string]float64{}
				if _, err := p.TCP(1, 1, false, out); err != nil {
					t.Fatal(err)
				}
				st, err := c.Stats()
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s, %s underlay: %.0f Mbit/s; b's veth ingress: %d skbs, %d bytes, mean %d, max %d, %d with several segments (MTU %d)",
					system.name, u, out["tcp1_mbps"], st.Packets, st.Bytes, st.Bytes/max(st.Packets, 1), st.Max, st.GSO, mtu)
				// 1 s of bulk TCP is at least tens of MB: thousands of frames.
				if st.Packets < 1000 || st.Bytes < 10<<20 {
					t.Fatalf("the counter saw %d skbs, %d bytes: the transfer did not cross %s", st.Packets, st.Bytes, l.IfB)
				}
				switch {
				case u == UnderlayWire && (st.Max > mtu+14 || st.GSO > 0):
					t.Errorf("wire underlay: an skb of %d bytes (MTU %d + 14), %d with several segments, crossed %s", st.Max, mtu, st.GSO, l.IfB)
				case u == UnderlayDefault && system.name == SystemKernel && st.Max <= mtu+14:
					t.Errorf("default underlay: no skb above MTU %d + 14 crossed %s (max %d): the counter cannot tell the underlays apart", mtu, l.IfB, st.Max)
				}
			})
		}
	}
}
