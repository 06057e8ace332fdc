//go:build linux

package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fips-go/fips/testing/daemons"
	"github.com/fips-go/fips/testing/netns"
)

// nodeNames are the namespaces' node names along a line.
var nodeNames = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

// BuildOptions shape a path beyond its topology.
type BuildOptions struct {
	// Shortcut adds a direct link between the first and last node, which
	// the system's routing prefers: traffic then bypasses the relays.
	// Only tests use it, to prove the route check catches a wrong path.
	Shortcut bool
	// Fips are the fips binaries; built into the mesh's directory when
	// empty.
	Fips daemons.Binaries
	// WireGuardGo is the wireguard-go binary (required for that system).
	WireGuardGo string
	// FipsConfig is YAML appended to every fips node's config (a
	// dataplane mode, once there are several).
	FipsConfig string
	// Transport is what the fips nodes link over: "" for UDP on every
	// veth, or "ethernet" for Ethernet transports only (see
	// BuildFipsEthernet).
	Transport string
	// Upstream are upstream FIPS's fips and fipsctl (BENCH_UPSTREAM), for
	// BuildUpstream; empty: that system is not measured.
	Upstream daemons.Binaries
	// Underlay is how the veths carry frames ("" is UnderlayDefault):
	// with UnderlayWire every veth end has its offloads off (SetWire)
	// before any daemon starts.
	Underlay Underlay
}

// Path is one system running on one topology, ready to measure: traffic
// from Src to DstAddr (an address inside Dst) crosses Relays.
type Path struct {
	System   string
	Topology Topology
	Underlay Underlay
	Mesh     *netns.Mesh
	Src, Dst string
	DstAddr  string
	Relays   []string

	// Notes are what the build saw that the figures do not say (an
	// AF_XDP row whose sockets did not open); they go into the report.
	Notes []string
	// Failed is why an optional system could not be built (tryBuild):
	// the path has no figures, only this note. Mesh is what was built of
	// it (nil when nothing was), already closed.
	Failed error

	// daemons are the pids of the system's processes by node (none for
	// the kernel).
	daemons map[string][]int
	// counter reads, on node, the packet counter the route check expects
	// traffic to move there.
	counter func(node string) (uint64, error)
}

// Hops are the nodes whose counters the route check reads: the relays,
// or the receiver on a direct path.
func (p *Path) Hops() []string {
	if len(p.Relays) > 0 {
		return p.Relays
	}
	return []string{p.Dst}
}

// Daemons returns the pids of the system's processes on node.
func (p *Path) Daemons(node string) []int { return p.daemons[node] }

// ifaceCounter reads an interface's rx or tx packet count in node's
// namespace.
func ifaceCounter(m *netns.Mesh, node, ifname, dir string) (uint64, error) {
	n := m.Node(node)
	if n == nil {
		return 0, fmt.Errorf("bench: no node %q", node)
	}
	out, err := exec.Command("ip", "-n", n.NS, "-j", "-s", "link", "show", "dev", ifname).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("bench: ip link show %s in %s: %v: %s", ifname, node, err, strings.TrimSpace(string(out)))
	}
	var links []struct {
		Stats64 map[string]struct {
			Packets uint64 `json:"packets"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return 0, fmt.Errorf("bench: ip -j link show %s: %v: %s", ifname, err, out)
	}
	return links[0].Stats64[dir].Packets, nil
}

// CheckRoute sends pings along p and fails unless every hop's counter
// moved by at least as many packets: the traffic takes the intended path.
func (p *Path) CheckRoute() error {
	const count = 20
	hops := p.Hops()
	before := make([]uint64, len(hops))
	for i, h := range hops {
		v, err := p.counter(h)
		if err != nil {
			return err
		}
		before[i] = v
	}
	out, err := p.Mesh.Exec(p.Src, "ping", "-6", "-q", "-c", strconv.Itoa(count), "-i", "0.01", "-W", "2", p.DstAddr)
	if err != nil || !strings.Contains(string(out), fmt.Sprintf(" %d received", count)) {
		return fmt.Errorf("bench: %s %s: route check ping %s→%s: %v\n%s", p.System, p.Topology.Name, p.Src, p.DstAddr, err, out)
	}
	for i, h := range hops {
		v, err := p.counter(h)
		if err != nil {
			return err
		}
		if d := v - before[i]; v < before[i] || d < count {
			return fmt.Errorf("bench: %s %s: route check: %d pings %s→%s moved %s's counter by %d, want ≥ %d: traffic bypasses %s",
				p.System, p.Topology.Name, count, p.Src, p.Dst, h, int64(v-before[i]), count, h)
		}
	}
	return nil
}

// line adds t's nodes to m and links them in a line (plus the shortcut),
// on the underlay o names.
func line(tb netns.TB, m *netns.Mesh, t Topology, o BuildOptions) (nodes []*netns.Node, links []*netns.Link) {
	for i := range t.Nodes {
		nodes = append(nodes, m.AddNode(nodeNames[i]))
	}
	for i := 0; i+1 < t.Nodes; i++ {
		links = append(links, m.Link(nodes[i], nodes[i+1]))
	}
	if o.Shortcut {
		links = append(links, m.Link(nodes[0], nodes[t.Nodes-1]))
	}
	switch o.Underlay {
	case "", UnderlayDefault:
	case UnderlayWire:
		for _, e := range linkEnds(links) {
			if err := SetWire(e[0], e[1]); err != nil {
				tb.Fatalf("%v", err)
			}
		}
	default:
		tb.Fatalf("bench: unknown underlay %q", o.Underlay)
	}
	return nodes, links
}

func newPath(system string, t Topology, o BuildOptions, m *netns.Mesh, nodes []*netns.Node) *Path {
	p := &Path{System: system, Topology: t, Underlay: underlayOf(o), Mesh: m, Src: nodes[0].Name, Dst: nodes[len(nodes)-1].Name,
		daemons: map[string][]int{}}
	for _, n := range nodes[1 : len(nodes)-1] {
		p.Relays = append(p.Relays, n.Name)
	}
	return p
}

func must(tb netns.TB, m *netns.Mesh, what string, cmds ...[]string) {
	for _, c := range cmds {
		if out, err := m.Exec(c[0], c[1:]...); err != nil {
			tb.Fatalf("bench: %s: %v: %v\n%s", what, c, err, out)
		}
	}
}

// BuildKernel is the limit: the same line with IPv6 on every veth and
// the relays forwarding in the kernel, no encryption. Link k is
// fd00:bb:k::/64 (.1 on the left end); the shortcut is link n-1.
func BuildKernel(tb netns.TB, t Topology, o BuildOptions) *Path {
	m := newMesh(tb, netns.Options{NoDaemons: true})
	nodes, links := line(tb, m, t, o)
	p := newPath(SystemKernel, t, o, m, nodes)
	addr := func(k, end int) string { return fmt.Sprintf("fd00:bb:%d::%d", k, end) }
	for k, l := range links {
		must(tb, m, "kernel line",
			[]string{l.A.Name, "ip", "addr", "add", addr(k, 1) + "/64", "dev", l.IfA, "nodad"},
			[]string{l.B.Name, "ip", "addr", "add", addr(k, 2) + "/64", "dev", l.IfB, "nodad"})
	}
	n := t.Nodes
	for i, node := range nodes {
		if i > 0 && i < n-1 {
			must(tb, m, "kernel line", []string{node.Name, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"})
		}
		for j := 0; j < n-1; j++ {
			switch {
			case j > i: // to the right, via link i's far end
				must(tb, m, "kernel line", []string{node.Name, "ip", "-6", "route", "add", fmt.Sprintf("fd00:bb:%d::/64", j), "via", addr(i, 2)})
			case j < i-1: // to the left, via link i-1's near end
				must(tb, m, "kernel line", []string{node.Name, "ip", "-6", "route", "add", fmt.Sprintf("fd00:bb:%d::/64", j), "via", addr(i-1, 1)})
			}
		}
	}
	p.DstAddr = addr(n-2, 2)
	if o.Shortcut {
		k := len(links) - 1
		must(tb, m, "kernel shortcut",
			[]string{p.Src, "ip", "-6", "route", "add", p.DstAddr + "/128", "via", addr(k, 2)},
			[]string{p.Dst, "ip", "-6", "route", "add", addr(0, 1) + "/128", "via", addr(k, 1)})
	}
	// A relay forwards out of the veth toward the receiver; a receiver
	// takes the packets in on its veth from the sender.
	p.counter = func(node string) (uint64, error) {
		for i, nd := range nodes {
			if nd.Name != node {
				continue
			}
			if i == n-1 {
				return ifaceCounter(m, node, links[n-2].IfB, "rx")
			}
			return ifaceCounter(m, node, links[i].IfA, "tx")
		}
		return 0, fmt.Errorf("bench: no node %q", node)
	}
	return p
}

// BuildFips runs fips-go on every node with default settings (UDP, TUN
// fips0, .fips DNS) and waits for the mesh to converge and the path to
// carry a ping. A relay's route counter is show_metrics'
// forwarding.forwarded_packets; the receiver's is fips0's rx (packets
// the daemon wrote to its TUN).
func BuildFips(tb netns.TB, t Topology, o BuildOptions) *Path {
	m := newMesh(tb, netns.Options{IPv6: true, Binaries: o.Fips, ExtraConfig: o.FipsConfig, Transport: o.Transport})
	nodes, _ := line(tb, m, t, o)
	p := newPath(SystemFips, t, o, m, nodes)
	m.Start()
	waitFipsUp(tb, m, t, 60*time.Second)
	for _, n := range nodes {
		p.daemons[n.Name] = []int{n.Pid()}
	}
	dst := nodes[len(nodes)-1]
	p.DstAddr = dst.IPv6()
	// A node maps an fd00::/8 address to a key only after learning the key,
	// as an application does by resolving <npub>.fips.
	out, err := m.Exec(p.Src, "dig", "@::1", "-p", "5354", dst.Npub()+".fips", "AAAA", "+short", "+time=2", "+tries=3")
	if err != nil || strings.TrimSpace(string(out)) != p.DstAddr {
		tb.Fatalf("bench: fips-go %s: dig %s.fips in %s: %v %q, want %s", t.Name, dst.Npub(), p.Src, err, out, p.DstAddr)
	}
	// The first packets wait for a lookup and the session handshake.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := m.Exec(p.Src, "ping", "-6", "-c", "1", "-W", "1", p.DstAddr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("bench: fips-go %s: no ping reply %s→%s within 20 s: %v\n%s\n%s", t.Name, p.Src, p.Dst, err, out, dst.Logs())
		}
		time.Sleep(100 * time.Millisecond) // an unreachable answer comes at once
	}
	p.counter = func(node string) (uint64, error) {
		if node == p.Dst {
			return ifaceCounter(m, node, "fips0", "rx")
		}
		n := m.Node(node)
		if n == nil {
			return 0, fmt.Errorf("bench: no node %q", node)
		}
		var v struct {
			Forwarding struct {
				ForwardedPackets uint64 `json:"forwarded_packets"`
			} `json:"forwarding"`
		}
		if err := n.Call("show_metrics", nil, &v); err != nil {
			return 0, fmt.Errorf("bench: show_metrics on %s: %w", node, err)
		}
		return v.Forwarding.ForwardedPackets, nil
	}
	return p
}

// waitFipsUp waits for m's daemons to converge, failing tb at once,
// with the daemon's own words, when one exits instead (a configuration
// it refuses, a dataplane it cannot load).
func waitFipsUp(tb netns.TB, m *netns.Mesh, t Topology, timeout time.Duration) {
	start := time.Now()
	for {
		for _, n := range m.Nodes() {
			if !n.Running() {
				tb.Fatalf("bench: fips-go %s: the daemon on %s exited at start: %s", t.Name, n.Name, exitReason(n.Logs()))
			}
		}
		if ok, _ := m.Converged(); ok {
			return
		}
		if time.Since(start) > timeout {
			m.WaitConvergedSince(start, 0) // fails tb with the nodes' logs
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitReason is the error a daemon printed as it exited (its last
// "fips: " line), else the last line it logged.
func exitReason(logs string) string {
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "fips: ") {
			return strings.TrimPrefix(lines[i], "fips: ")
		}
	}
	if l := lines[len(lines)-1]; l != "" {
		return l
	}
	return "nothing logged"
}

// BuildFipsXDP is BuildFips with dataplane.mode xdp: the same daemons
// with the XDP program in front of their sockets (the start fails if it
// cannot attach).
func BuildFipsXDP(tb netns.TB, t Topology, o BuildOptions) *Path {
	o.FipsConfig += "dataplane: { mode: xdp }\n"
	p := BuildFips(tb, t, o)
	p.System = SystemFipsXDP
	return p
}

// BuildFipsAFXDP is BuildFipsXDP with dataplane.afxdp: established frames
// of known links are redirected into AF_XDP sockets read by the workers.
func BuildFipsAFXDP(tb netns.TB, t Topology, o BuildOptions) *Path {
	o.FipsConfig += "dataplane: { mode: xdp, afxdp: true }\n"
	p := BuildFips(tb, t, o)
	p.System = SystemFipsAFXDP
	return p
}

// BuildFipsAFXDPXSK is BuildFipsAFXDP with dataplane.afxdp_transmit: xsk:
// what the AF_XDP workers forward is sealed into TX frames and sent
// through the sockets' TX rings instead of the UDP sockets.
func BuildFipsAFXDPXSK(tb netns.TB, t Topology, o BuildOptions) *Path {
	o.FipsConfig += "dataplane: { mode: xdp, afxdp: true, afxdp_transmit: xsk }\n"
	p := BuildFips(tb, t, o)
	p.System = SystemFipsAFXDPXSK
	return p
}

// BuildFipsEthernet is BuildFips over Ethernet transports only, in
// dataplane.mode userspace (AF_PACKET sockets): every link end is a
// transports.ethernet instance on the node's veth (a relay has one per
// veth), accepting connections, with beacons off; each node names the
// other end of each of its links as a static peer by interface and MAC
// ({transport: ethernet, addr: "<veth>/<mac>"}, the MACs fixed by
// netns.LinkMAC), as testing/netns's TestEthernetLine runs them. No UDP
// transport is configured, so every hop is raw EtherType 0x2121 frames.
func BuildFipsEthernet(tb netns.TB, t Topology, o BuildOptions) *Path {
	o.Transport = "ethernet"
	o.FipsConfig += "dataplane: { mode: userspace }\n"
	p := BuildFips(tb, t, o)
	p.System = SystemFipsEthernet
	return p
}

// BuildFipsEthernetAFXDP is BuildFipsEthernet with dataplane.mode xdp,
// dataplane.afxdp and afxdp_transmit xsk: established Ethernet frames of
// known links reach the workers through AF_XDP sockets and what a relay
// forwards leaves through their TX rings. A daemon that refuses this
// configuration fails the build (tryBuild turns that into the row's
// note); one that starts without AF_XDP sockets adds a note.
func BuildFipsEthernetAFXDP(tb netns.TB, t Topology, o BuildOptions) *Path {
	o.Transport = "ethernet"
	o.FipsConfig += "dataplane: { mode: xdp, afxdp: true, afxdp_transmit: xsk }\n"
	p := BuildFips(tb, t, o)
	p.System = SystemFipsEthernetAFXDP
	p.Notes = append(p.Notes, afxdpNotes(p)...)
	return p
}

// BuildUpstream is BuildFips with upstream FIPS's binaries (o.Upstream)
// on every node and no fips-go-only configuration: the same UDP line,
// TUN fips0 and .fips DNS as fips-go's default row. The route counters
// are the kernel's, not show_metrics (whose fields are fips-go's): a
// relay's tx on its veth toward the receiver, the receiver's fips0 rx.
// Untested against upstream itself here (it does not build on the
// reference machine); TestUpstreamSystem runs it with fips-go's binaries
// in upstream's place.
func BuildUpstream(tb netns.TB, t Topology, o BuildOptions) *Path {
	if o.Upstream.Fips == "" || o.Upstream.Fipsctl == "" {
		tb.Fatalf("bench: no upstream fips and fipsctl (BENCH_UPSTREAM)")
	}
	o.Fips, o.FipsConfig, o.Transport = o.Upstream, "", ""
	p := BuildFips(tb, t, o)
	p.System = SystemUpstream
	links := p.Mesh.Links()
	p.counter = func(node string) (uint64, error) {
		if node == p.Dst {
			return ifaceCounter(p.Mesh, node, "fips0", "rx")
		}
		for i, l := range links {
			if l.A.Name == node && i < t.Nodes-1 {
				return ifaceCounter(p.Mesh, node, l.IfA, "tx")
			}
		}
		return 0, fmt.Errorf("bench: no node %q", node)
	}
	return p
}

// afxdpNotes says, for every node of p whose show_status reports no
// AF_XDP sockets, why not (the daemon then runs on its plain sockets).
func afxdpNotes(p *Path) []string {
	var notes []string
	for _, n := range p.Mesh.Nodes() {
		var st struct {
			Dataplane struct {
				AFXDP struct {
					Enabled bool   `json:"enabled"`
					Reason  string `json:"reason"`
				} `json:"afxdp"`
			} `json:"dataplane"`
		}
		if err := n.Call("show_status", nil, &st); err != nil {
			notes = append(notes, fmt.Sprintf("%s: show_status: %v", n.Name, err))
			continue
		}
		if !st.Dataplane.AFXDP.Enabled {
			notes = append(notes, fmt.Sprintf("no AF_XDP on %s (%s)", n.Name, st.Dataplane.AFXDP.Reason))
		}
	}
	return notes
}

// buildTB is the TB an optional system builds under (tryBuild): Fatalf
// unwinds only the build, and the meshes it made are remembered so a
// failed build can be closed at once. Cleanups still go to the parent
// (they run again at its end; Mesh.Close is idempotent), so an
// interrupt during the build leaves nothing either.
type buildTB struct {
	netns.TB
	meshes []*netns.Mesh
	// built is set once the build returned: the meshes keep this TB, and
	// a Fatalf of theirs after that is the parent's again.
	built bool
}

// buildFailed carries a buildTB's Fatalf message to tryBuild.
type buildFailed struct{ msg string }

func (b *buildTB) Fatalf(format string, args ...any) {
	if b.built {
		b.TB.Fatalf(format, args...)
		return
	}
	panic(buildFailed{fmt.Sprintf(format, args...)})
}

// newMesh is netns.New, telling a buildTB about the mesh.
func newMesh(tb netns.TB, o netns.Options) *netns.Mesh {
	m := netns.New(tb, o)
	if b, ok := tb.(*buildTB); ok {
		b.meshes = append(b.meshes, m)
	}
	return m
}

// tryBuild builds system on t as build does, but a failure (Fatalf
// during the build) does not stop the run: it returns a path with no
// figures whose Failed says why, everything it built already closed.
func tryBuild(tb netns.TB, system string, build func(netns.TB, Topology, BuildOptions) *Path, t Topology, o BuildOptions) (p *Path) {
	b := &buildTB{TB: tb}
	defer func() {
		b.built = true
		v := recover()
		if v == nil {
			return
		}
		f, ok := v.(buildFailed)
		if !ok {
			panic(v)
		}
		p = &Path{System: system, Topology: t, Underlay: underlayOf(o), Failed: errors.New(f.msg)}
		for _, m := range b.meshes {
			m.Close()
			p.Mesh = m
		}
	}()
	return build(b, t, o)
}

// BuildWireGuard runs wireguard-go along the line: tunnel k joins node k
// and k+1 (fd00:77:k::1 and ::2, /64), each end its own device with one
// peer (allowed ::/0), so a relay has two devices and the kernel
// forwards between them, as an operator would chain wireguard-go. A
// relay's route counter is tx on its device toward the receiver; the
// receiver's is rx on its device.
func BuildWireGuard(tb netns.TB, t Topology, o BuildOptions) *Path {
	if o.Shortcut {
		tb.Fatalf("bench: wireguard-go paths have no shortcut variant")
	}
	if o.WireGuardGo == "" {
		tb.Fatalf("bench: no wireguard-go binary")
	}
	m := newMesh(tb, netns.Options{NoDaemons: true})
	nodes, links := line(tb, m, t, o)
	p := newPath(SystemWireGuard, t, o, m, nodes)
	n := t.Nodes
	dev := func(k int, side string) string { return fmt.Sprintf("%sw%d%s", m.Prefix, k, side) }
	const rightPort, leftPort = 51820, 51821
	for k, l := range links {
		ka, kb := NewWGKey(tb), NewWGKey(tb)
		left, right := l.A.Name, l.B.Name
		p.daemons[left] = append(p.daemons[left],
			WGDevice(tb, m, o.WireGuardGo, left, dev(k, "r"), ka, rightPort, kb, fmt.Sprintf("%s:%d", l.AddrB, leftPort)))
		p.daemons[right] = append(p.daemons[right],
			WGDevice(tb, m, o.WireGuardGo, right, dev(k, "l"), kb, leftPort, ka, fmt.Sprintf("%s:%d", l.AddrA, rightPort)))
		must(tb, m, "wireguard-go line",
			[]string{left, "ip", "addr", "add", fmt.Sprintf("fd00:77:%d::1/64", k), "dev", dev(k, "r"), "nodad"},
			[]string{right, "ip", "addr", "add", fmt.Sprintf("fd00:77:%d::2/64", k), "dev", dev(k, "l"), "nodad"},
			[]string{left, "ip", "link", "set", dev(k, "r"), "up"},
			[]string{right, "ip", "link", "set", dev(k, "l"), "up"})
	}
	for i, node := range nodes {
		if i > 0 && i < n-1 {
			must(tb, m, "wireguard-go line", []string{node.Name, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"})
		}
		for j := 0; j < n-1; j++ {
			switch {
			case j > i:
				must(tb, m, "wireguard-go line", []string{node.Name, "ip", "-6", "route", "add", fmt.Sprintf("fd00:77:%d::/64", j), "dev", dev(i, "r")})
			case j < i-1:
				must(tb, m, "wireguard-go line", []string{node.Name, "ip", "-6", "route", "add", fmt.Sprintf("fd00:77:%d::/64", j), "dev", dev(i-1, "l")})
			}
		}
	}
	p.DstAddr = fmt.Sprintf("fd00:77:%d::2", n-2)
	// The first packets wait for each hop's handshake, which a busy
	// machine can stretch past a few pings: retry until a deadline.
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := m.Exec(p.Src, "ping", "-6", "-c", "1", "-W", "2", p.DstAddr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("bench: wireguard-go %s: ping %s→%s: %v\n%s", t.Name, p.Src, p.DstAddr, err, out)
		}
	}
	p.counter = func(node string) (uint64, error) {
		for i, nd := range nodes {
			if nd.Name != node {
				continue
			}
			if i == n-1 {
				return ifaceCounter(m, node, dev(n-2, "l"), "rx")
			}
			return ifaceCounter(m, node, dev(i, "r"), "tx")
		}
		return 0, fmt.Errorf("bench: no node %q", node)
	}
	return p
}

// BuildWireGuardGo compiles wireguard-go at the version go.mod pins into
// dir and returns its path and version.
func BuildWireGuardGo(dir string) (bin, version string, err error) {
	bin = filepath.Join(dir, "wireguard-go")
	root, err := daemons.ModuleRoot()
	if err != nil {
		return "", "", err
	}
	cmd := exec.Command("go", "build", "-o", bin, "golang.zx2c4.com/wireguard")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("bench: build wireguard-go: %v\n%s", err, out)
	}
	cmd = exec.Command("go", "list", "-m", "golang.zx2c4.com/wireguard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("bench: go list -m golang.zx2c4.com/wireguard: %w", err)
	}
	f := strings.Fields(string(out))
	return bin, f[len(f)-1], nil
}

// underlayOf is o's underlay, UnderlayDefault when unset.
func underlayOf(o BuildOptions) Underlay {
	if o.Underlay == "" {
		return UnderlayDefault
	}
	return o.Underlay
}
