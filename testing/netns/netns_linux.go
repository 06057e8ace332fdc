//go:build linux

// Package netns runs real fips daemons in Linux network namespaces joined
// by veth pairs: one namespace per node, one veth pair (its own /30) per
// link. Everything it creates carries a per-run prefix ("fgo<random>-") so
// parallel runs never collide, and Close (registered with the driver's
// Cleanup) kills every daemon's process group and deletes every namespace
// and veth with that prefix. Leftovers of runs whose owner process died
// are swept by the next New.
//
// It needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's `ip`.
package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/testing/daemons"
)

// TB is what the harness needs from its driver: *testing.T satisfies it,
// and so does the demo program's small runner.
type TB interface {
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Options configure a Mesh. The zero value is usable.
type Options struct {
	// Binaries are the fips and fipsctl to run; built into the run's
	// directory when empty.
	Binaries daemons.Binaries
	// Port is the UDP port every daemon binds in its namespace (2121).
	Port int
	// LinkDelay, when set, adds a netem delay to every veth end, if the
	// kernel has sch_netem (logged and skipped otherwise).
	LinkDelay time.Duration
	// LogLevel is node.log_level in every config ("" leaves the default,
	// or takes $FIPS_NETNS_LOG_LEVEL when set).
	LogLevel string
	// IPv6 turns on every node's IPv6 adapter (TUN fips0) and its .fips
	// DNS responder on [::1]:5354.
	IPv6 bool
	// TunMTU is every node's tun.mtu with IPv6 (0: upstream's 1280).
	TunMTU int
	// ExtraConfig is YAML appended to every node's fips.yaml.
	ExtraConfig string
	// NodeConfig is YAML added to every node's node: section (which
	// ExtraConfig cannot repeat), each line indented two spaces.
	NodeConfig string
	// NoDaemons makes a mesh of namespaces and veths only (for other
	// software under test): no fips binaries are built, Start refuses.
	NoDaemons bool
	// Transport is the transport every node binds on Port and names its
	// static peers by: "udp" (the default) or "tcp"; or "ethernet": an
	// instance on each of the node's link ends (named l<index>, accepting
	// connections), its static peers named iface/mac (LinkMAC).
	Transport string
	// KeepLogs, when set, is a directory Close copies every node's
	// fips.yaml and logs into (one folder a node) before the run's
	// directory goes.
	KeepLogs string
}

// LogLevelEnv names the environment variable that sets the daemons' log
// level when Options.LogLevel is empty (debugging a scenario).
const LogLevelEnv = "FIPS_NETNS_LOG_LEVEL"

// WireGuardSocketDir is where wireguard-go puts its UAPI sockets.
const WireGuardSocketDir = "/var/run/wireguard"

// ownersDir holds one file per live run, named by its prefix, holding the
// owner's process id and the run's directory, so a later run can sweep what a killed run left behind.
var ownersDir = filepath.Join(os.TempDir(), "fips-go-netns-owners")

// Mesh is a topology of namespaces, each running one fips daemon.
type Mesh struct {
	t      TB
	opts   Options
	Prefix string
	Dir    string
	bin    daemons.Binaries

	mu      sync.Mutex
	nodes   []*Node
	links   []*Link
	started bool
	closed  bool
}

// Node is one namespace and its daemon.
type Node struct {
	m      *Mesh
	Name   string
	NS     string
	Dir    string
	Config string
	Socket string
	ID     *identity.Identity
	// ExtraConfig is YAML appended to this node's fips.yaml only (after
	// Options.ExtraConfig); set it before Start.
	ExtraConfig string
	// NodeConfig is YAML added to this node's node: section only (after
	// Options.NodeConfig), each line indented two spaces; set it before
	// Start.
	NodeConfig string
	// Bin is the fips and fipsctl this node runs when set (another
	// implementation, say); the zero value runs the mesh's.
	Bin daemons.Binaries

	links  []*Link
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// Link is one veth pair between two nodes, 10.77.<index>.1/30 on A's end
// and .2/30 on B's.
type Link struct {
	Index        int
	A, B         *Node
	IfA, IfB     string
	AddrA, AddrB string
	// OneWay links list B as a static peer of A only: A dials, B accepts.
	OneWay bool
}

// New prepares an empty mesh and registers its Close with t.Cleanup. It
// fails t if `ip` is missing or the run directory cannot be made.
func New(t TB, opts Options) *Mesh {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("netns: iproute2 `ip` not found: %v", err)
	}
	if opts.Port == 0 {
		opts.Port = 2121
	}
	sweepOrphans(t)
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatalf("netns: %v", err)
	}
	m := &Mesh{t: t, opts: opts, Prefix: "fgo" + hex.EncodeToString(rnd[:]) + "-"}
	dir, err := os.MkdirTemp("", m.Prefix)
	if err != nil {
		t.Fatalf("netns: %v", err)
	}
	m.Dir = dir
	if err := os.MkdirAll(ownersDir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(ownersDir, m.Prefix), []byte(fmt.Sprintf("%d %s\n", os.Getpid(), dir)), 0o644)
	}
	t.Cleanup(m.Close)
	m.bin = opts.Binaries
	if !opts.NoDaemons && (m.bin.Fips == "" || m.bin.Fipsctl == "") {
		b, err := daemons.Build(dir)
		if err != nil {
			t.Fatalf("netns: %v", err)
		}
		m.bin = b
	}
	return m
}

// Binaries returns the fips and fipsctl the mesh runs.
func (m *Mesh) Binaries() daemons.Binaries { return m.bin }

// Nodes returns the nodes in the order they were added.
func (m *Mesh) Nodes() []*Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.nodes)
}

// Links returns the links in the order they were made.
func (m *Mesh) Links() []*Link {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.links)
}

// Node returns the node called name, or nil.
func (m *Mesh) Node(name string) *Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// AddNode creates a namespace (with its loopback up) and a fresh identity.
func (m *Mesh) AddNode(name string) *Node {
	if m.Node(name) != nil {
		m.t.Fatalf("netns: node %q added twice", name)
	}
	id, err := identity.Generate(nil)
	if err != nil {
		m.t.Fatalf("netns: %v", err)
	}
	n := &Node{m: m, Name: name, NS: m.Prefix + name, Dir: filepath.Join(m.Dir, name), ID: id}
	n.Config = filepath.Join(n.Dir, "fips.yaml")
	n.Socket = filepath.Join(n.Dir, "control.sock")
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		m.t.Fatalf("netns: %v", err)
	}
	if out, err := ipCmd("netns", "add", n.NS); err != nil {
		m.t.Fatalf("netns: cannot create namespace %s: %v\n%s", n.NS, err, out)
	}
	m.mu.Lock()
	m.nodes = append(m.nodes, n)
	m.mu.Unlock()
	if out, err := ipCmd("-n", n.NS, "link", "set", "lo", "up"); err != nil {
		m.t.Fatalf("netns: %s: lo up: %v\n%s", n.NS, err, out)
	}
	if m.opts.IPv6 {
		m.systemResolver(n)
	}
	return n
}

// systemResolver makes the namespace's system resolver ask the node's
// .fips responder, so unmodified programs resolve <npub>.fips by name:
// `ip netns exec` mounts /etc/netns/NS/resolv.conf over /etc/resolv.conf,
// and since resolv.conf cannot name a port, queries to [::1]:53 are
// redirected to the responder's port 5354 (as systemd-resolved's per-link
// DNS does for an installed node).
func (m *Mesh) systemResolver(n *Node) {
	dir := filepath.Join("/etc/netns", n.NS)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		m.t.Fatalf("netns: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver ::1\noptions timeout:2 attempts:2\n"), 0o644); err != nil {
		m.t.Fatalf("netns: %v", err)
	}
	for _, args := range [][]string{
		{"nft", "add", "table", "ip6", "fipsdns"},
		{"nft", "add chain ip6 fipsdns out { type nat hook output priority -100; }"},
		{"nft", "add", "rule", "ip6", "fipsdns", "out", "ip6", "daddr", "::1", "udp", "dport", "53", "redirect", "to", ":5354"},
	} {
		if out, err := exec.Command("ip", append([]string{"netns", "exec", n.NS}, args...)...).CombinedOutput(); err != nil {
			m.t.Fatalf("netns: %s: %v: %v\n%s", n.NS, args, err, out)
		}
	}
}

// Link joins a and b with a veth pair and configures both ends; each
// lists the other as a static peer.
func (m *Mesh) Link(a, b *Node) *Link { return m.link(a, b, false) }

// LinkOneWay is Link with only a listing b as a static peer: a dials, b
// accepts an inbound link from a node its configuration does not name.
func (m *Mesh) LinkOneWay(a, b *Node) *Link { return m.link(a, b, true) }

func (m *Mesh) link(a, b *Node, oneWay bool) *Link {
	m.mu.Lock()
	k := len(m.links)
	m.mu.Unlock()
	if k > 255 {
		m.t.Fatalf("netns: at most 256 links")
	}
	l := &Link{Index: k, A: a, B: b, OneWay: oneWay,
		IfA: fmt.Sprintf("%sl%da", m.Prefix, k), IfB: fmt.Sprintf("%sl%db", m.Prefix, k),
		AddrA: fmt.Sprintf("10.77.%d.1", k), AddrB: fmt.Sprintf("10.77.%d.2", k)}
	steps := [][]string{
		{"link", "add", l.IfA, "netns", a.NS, "address", LinkMAC(k, false), "type", "veth", "peer", "name", l.IfB,
			"netns", b.NS, "address", LinkMAC(k, true)},
		{"-n", a.NS, "addr", "add", l.AddrA + "/30", "dev", l.IfA},
		{"-n", b.NS, "addr", "add", l.AddrB + "/30", "dev", l.IfB},
		{"-n", a.NS, "link", "set", l.IfA, "up"},
		{"-n", b.NS, "link", "set", l.IfB, "up"},
	}
	for _, s := range steps {
		if out, err := ipCmd(s...); err != nil {
			m.t.Fatalf("netns: ip %s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	if d := m.opts.LinkDelay; d > 0 {
		for _, e := range [][2]string{{a.NS, l.IfA}, {b.NS, l.IfB}} {
			out, err := exec.Command("tc", "-n", e[0], "qdisc", "add", "dev", e[1], "root", "netem",
				"delay", fmt.Sprintf("%dus", d.Microseconds())).CombinedOutput()
			if err != nil {
				m.t.Logf("netns: no link delay on %s (%v: %s)", e[1], err, strings.TrimSpace(string(out)))
			}
		}
	}
	m.mu.Lock()
	m.links = append(m.links, l)
	a.links = append(a.links, l)
	b.links = append(b.links, l)
	m.mu.Unlock()
	return l
}

// LinkMAC is the MAC of link k's A end (or B end): 02:77:00:k:00:0a
// (0b), so an Ethernet peer address is known before the link exists.
func LinkMAC(k int, b bool) string {
	end := 0xa
	if b {
		end = 0xb
	}
	return fmt.Sprintf("02:77:00:%02x:00:%02x", k, end)
}

// config is n's fips.yaml: the transport (UDP unless Options.Transport
// says otherwise) on every address of the namespace, and each link's
// other end as a static peer (but the dialled end of a one-way link).
func (n *Node) config() string {
	port := n.m.opts.Port
	transport := n.m.opts.Transport
	if transport == "" {
		transport = "udp"
	}
	var peers, eth strings.Builder
	for _, l := range n.links {
		other, addr, mine, theirs := l.B, l.AddrB, l.IfA, LinkMAC(l.Index, true)
		if l.B == n {
			other, addr, mine, theirs = l.A, l.AddrA, l.IfB, LinkMAC(l.Index, false)
		}
		fmt.Fprintf(&eth, "    l%d: { interface: %s, accept_connections: true }\n", l.Index, mine)
		if l.B == n && l.OneWay {
			continue
		}
		target := fmt.Sprintf("%s:%d", addr, port)
		if transport == "ethernet" {
			target = mine + "/" + theirs
		}
		fmt.Fprintf(&peers, "  - npub: %q\n    addresses:\n      - { transport: %s, addr: \"%s\" }\n", other.ID.Npub(), transport, target)
	}
	level := ""
	lv := n.m.opts.LogLevel
	if lv == "" {
		lv = os.Getenv(LogLevelEnv)
	}
	if lv != "" {
		level = fmt.Sprintf("  log_level: %s\n", lv)
	}
	level += n.m.opts.NodeConfig + n.NodeConfig
	p := "peers: []\n"
	if peers.Len() > 0 {
		p = "peers:\n" + peers.String()
	}
	v6 := "tun: { enabled: false }\ndns: { enabled: false }\n"
	if n.m.opts.IPv6 {
		mtu := n.m.opts.TunMTU
		if mtu == 0 {
			mtu = 1280
		}
		v6 = fmt.Sprintf("tun: { enabled: true, name: fips0, mtu: %d }\ndns: { enabled: true, bind_addr: \"::1\", port: 5354 }\n", mtu)
	}
	transports := fmt.Sprintf("  %s: { bind_addr: \"0.0.0.0:%d\" }\n", transport, port)
	if transport == "ethernet" {
		transports = "  ethernet:\n" + eth.String()
	}
	return fmt.Sprintf("node:\n  identity: { nsec: %q }\n  control: { socket_path: %q }\n%s"+
		"transports:\n%s%s%s%s", n.ID.Secret().Hex(), n.Socket, level, transports, v6, p, n.m.opts.ExtraConfig+n.ExtraConfig)
}

// Start writes every node's config and starts its daemon in its namespace.
func (m *Mesh) Start() {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		m.t.Fatalf("netns: Start called twice")
	}
	m.started = true
	nodes := slices.Clone(m.nodes)
	m.mu.Unlock()
	if m.opts.NoDaemons {
		m.t.Fatalf("netns: Start on a mesh made with NoDaemons")
	}
	for _, n := range nodes {
		m.startNode(n)
	}
}

// StartNode writes the config of n, a node added after Start (a late
// joiner), and starts its daemon. The running nodes' configs stay as
// they were: link n to them with LinkOneWay(n, …).
func (m *Mesh) StartNode(n *Node) {
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if !started || n.Pid() != 0 {
		m.t.Fatalf("netns: StartNode %s: for a node added after Start", n.Name)
	}
	m.startNode(n)
}

func (m *Mesh) startNode(n *Node) {
	if err := os.WriteFile(n.Config, []byte(n.config()), 0o600); err != nil {
		m.t.Fatalf("netns: %v", err)
	}
	if err := n.start(); err != nil {
		m.t.Fatalf("netns: start %s: %v", n.Name, err)
	}
}

// bin is the fips and fipsctl n runs.
func (n *Node) bin() daemons.Binaries {
	if n.Bin.Fips != "" {
		return n.Bin
	}
	return n.m.bin
}

// StartWithConfig starts n's daemon on the fips.yaml the caller wrote to
// n.Config (a test that builds a config the harness does not, such as a
// Tor transport's); Close stops it as any other.
func (n *Node) StartWithConfig() error { return n.start() }

func (n *Node) start() error {
	log := filepath.Join(n.Dir, "fips.log")
	n.m.mu.Lock()
	n.starts++
	runs := n.starts
	n.m.mu.Unlock()
	if runs > 1 {
		// The previous run's log stays beside the new one.
		_ = os.Rename(log, filepath.Join(n.Dir, fmt.Sprintf("fips.%d.log", runs-1)))
	}
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	// `ip netns exec` execs fips in place, so the pid is the daemon's.
	cmd := exec.Command("ip", "netns", "exec", n.NS, n.bin().Fips, "-c", n.Config)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group (killed as a whole); die with the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	n.m.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.m.mu.Unlock()
	return nil
}

// stop sends SIGTERM to the daemon's process group, then SIGKILL after
// grace.
func (n *Node) stop(grace time.Duration) {
	n.m.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.m.mu.Unlock()
	if cmd == nil {
		return
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
}

// Stop stops n's daemon as Close does (SIGTERM, then SIGKILL after
// grace) and waits for it to exit; Restart starts it again.
func (n *Node) Stop(grace time.Duration) { n.stop(grace) }

// Kill is kill -9: SIGKILL to the daemon's process group, no SIGTERM
// first, and it waits for the exit; Restart starts it again.
func (n *Node) Kill() {
	n.m.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
}

// Restart starts n's daemon again, with the same config and identity,
// after Stop or Kill. Its log starts afresh (Logs); the previous run's
// is kept as fips.<run>.log.
func (n *Node) Restart() {
	n.m.mu.Lock()
	exited := n.exited
	n.m.mu.Unlock()
	if exited != nil {
		select {
		case <-exited:
		default:
			n.m.t.Fatalf("netns: Restart %s: the daemon is still running", n.Name)
		}
	}
	if err := n.start(); err != nil {
		n.m.t.Fatalf("netns: restart %s: %v", n.Name, err)
	}
}

// Pid is the daemon's process id, 0 before Start.
func (n *Node) Pid() int {
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Running reports whether the daemon was started and has not exited.
func (n *Node) Running() bool {
	n.m.mu.Lock()
	exited := n.exited
	n.m.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Logs returns what the node's daemon has logged.
func (n *Node) Logs() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "fips.log"))
	return string(b)
}

// Npub is the node's public key in bech32.
func (n *Node) Npub() string { return n.ID.Npub() }

// NodeAddr is the node's 16-byte NodeAddr in hex.
func (n *Node) NodeAddr() string { return n.ID.NodeAddr().String() }

// IPv6 is the node's fd00::/8 address.
func (n *Node) IPv6() string { return n.ID.IPv6().String() }

// Call sends one control request to n's daemon and decodes the data into
// out (if not nil). The socket is a file, so this works from the root
// namespace.
func (n *Node) Call(command string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := ctl.Call(ctx, n.Socket, command, params)
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Exec runs args inside node's namespace and returns the combined output.
func (m *Mesh) Exec(node string, args ...string) ([]byte, error) {
	n := m.Node(node)
	if n == nil {
		return nil, fmt.Errorf("netns: no node %q", node)
	}
	return exec.Command("ip", append([]string{"netns", "exec", n.NS}, args...)...).CombinedOutput()
}

// Fipsctl runs fipsctl against node's control socket, inside its
// namespace, and returns stdout (stderr is appended to the error).
func (m *Mesh) Fipsctl(node string, args ...string) ([]byte, error) {
	n := m.Node(node)
	if n == nil {
		return nil, fmt.Errorf("netns: no node %q", node)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.NS, n.bin().Fipsctl, "-s", n.Socket}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, err
}

// TreeView is the part of show_tree the harness reads.
type TreeView struct {
	Root     string   `json:"root"`
	IsRoot   bool     `json:"is_root"`
	Depth    int      `json:"depth"`
	MyCoords []string `json:"my_coords"`
}

// Tree returns n's show_tree.
func (n *Node) Tree() (TreeView, error) {
	var tv TreeView
	err := n.Call("show_tree", nil, &tv)
	return tv, err
}

// Converged reports whether every node has all its link peers up, every
// show_tree names the smallest NodeAddr as root with consistent
// coordinates, and every node's peer filters together count at least what
// a filter of the other nodes estimates (daemons.FilterEstimate: exact on
// a tree; a heuristic with cycles). It returns why not otherwise.
func (m *Mesh) Converged() (bool, string) {
	nodes := m.Nodes()
	minAddr := ""
	for _, n := range nodes {
		if a := n.NodeAddr(); minAddr == "" || a < minAddr {
			minAddr = a
		}
	}
	for _, n := range nodes {
		var peers struct {
			Peers []json.RawMessage `json:"peers"`
		}
		if err := n.Call("show_peers", nil, &peers); err != nil {
			return false, fmt.Sprintf("%s: show_peers: %v", n.Name, err)
		}
		if len(peers.Peers) < len(n.links) {
			return false, fmt.Sprintf("%s: %d of %d peers up", n.Name, len(peers.Peers), len(n.links))
		}
		tv, err := n.Tree()
		if err != nil {
			return false, fmt.Sprintf("%s: show_tree: %v", n.Name, err)
		}
		if tv.Root != minAddr || len(tv.MyCoords) != tv.Depth+1 || tv.MyCoords[0] != n.NodeAddr() {
			return false, fmt.Sprintf("%s: root %s depth %d, want root %s", n.Name, tv.Root, tv.Depth, minAddr)
		}
		var b struct {
			PeerFilters []struct {
				HasFilter      bool     `json:"has_filter"`
				EstimatedCount *float64 `json:"estimated_count"`
			} `json:"peer_filters"`
		}
		if err := n.Call("show_bloom", nil, &b); err != nil {
			return false, fmt.Sprintf("%s: show_bloom: %v", n.Name, err)
		}
		sum := 0.0
		for _, f := range b.PeerFilters {
			if f.EstimatedCount != nil {
				sum += *f.EstimatedCount
			}
		}
		var others []identity.NodeAddr
		for _, o := range nodes {
			if o != n {
				others = append(others, o.ID.NodeAddr())
			}
		}
		if want := daemons.FilterEstimate(others...); sum < want-0.5 {
			return false, fmt.Sprintf("%s: peer filters cover %.1f of %d other nodes (a filter of exactly those estimates %.1f)",
				n.Name, sum, len(nodes)-1, want)
		}
	}
	return true, ""
}

// WaitConverged polls Converged every 50 ms and fails the driver if the
// mesh has not converged within timeout. It returns how long it took.
func (m *Mesh) WaitConverged(timeout time.Duration) time.Duration {
	return m.WaitConvergedSince(time.Now(), timeout)
}

// WaitConvergedSince is WaitConverged for a wait that began at start
// (a caller that polled on its own and wants the logs on failure).
func (m *Mesh) WaitConvergedSince(start time.Time, timeout time.Duration) time.Duration {
	for {
		ok, why := m.Converged()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			var logs strings.Builder
			for _, n := range m.Nodes() {
				fmt.Fprintf(&logs, "--- %s ---\n%s", n.Name, tail(n.Logs(), 20))
			}
			m.t.Fatalf("netns: not converged after %v: %s\n%s", timeout, why, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, lines int) string {
	parts := strings.SplitAfter(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "")
}

// Close stops every daemon (SIGTERM, then SIGKILL to its process group),
// deletes every namespace and veth with the run's prefix, and removes the
// run's directory. It is idempotent and registered with t.Cleanup.
func (m *Mesh) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	nodes := slices.Clone(m.nodes)
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.stop(2 * time.Second)
		}()
	}
	wg.Wait()
	if err := Sweep(m.Prefix); err != nil {
		m.t.Logf("netns: sweep %s: %v", m.Prefix, err)
	}
	if m.opts.KeepLogs != "" {
		for _, n := range nodes {
			if err := keepLogs(n.Dir, filepath.Join(m.opts.KeepLogs, n.Name)); err != nil {
				m.t.Logf("netns: keeping %s's logs: %v", n.Name, err)
			}
		}
	}
	if m.Dir != "" {
		_ = os.RemoveAll(m.Dir)
	}
	_ = os.Remove(filepath.Join(ownersDir, m.Prefix))
}

// keepLogs copies a node's fips.yaml and fips*.log from dir into to.
func keepLogs(dir, to string) error {
	files, err := filepath.Glob(filepath.Join(dir, "fips*.log"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, f := range append(files, filepath.Join(dir, "fips.yaml")) {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Namespaces lists the network namespaces whose name starts with prefix.
func Namespaces(prefix string) ([]string, error) {
	out, err := ipCmd("netns", "list")
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %v: %s", err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// RootLinks lists the interfaces of the root namespace whose name starts
// with prefix.
func RootLinks(prefix string) ([]string, error) {
	out, err := ipCmd("-o", "link", "show")
	if err != nil {
		return nil, fmt.Errorf("ip link: %v: %s", err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names, nil
}

// Pids lists the processes running in the namespaces whose name starts
// with prefix.
func Pids(prefix string) ([]int, error) {
	nss, err := Namespaces(prefix)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, ns := range nss {
		out, _ := ipCmd("netns", "pids", ns)
		for _, f := range strings.Fields(string(out)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
	}
	return pids, nil
}

// Sweep kills every process in a namespace with prefix, deletes those
// namespaces (which takes their veth ends along) and any root-namespace
// interface with prefix. prefix must be a run's prefix, not "".
func Sweep(prefix string) error {
	if len(prefix) < 4 {
		return fmt.Errorf("refusing to sweep prefix %q", prefix)
	}
	var errs []error
	pids, err := Pids(prefix)
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	nss, err := Namespaces(prefix)
	if err != nil {
		errs = append(errs, err)
	}
	for _, ns := range nss {
		if out, err := ipCmd("netns", "del", ns); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", ns, err, out))
		}
	}
	// Resolver configuration written for the namespaces (systemResolver).
	if dirs, err := filepath.Glob(filepath.Join("/etc/netns", prefix+"*")); err == nil {
		for _, d := range dirs {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// UAPI sockets of wireguard-go devices named with the prefix (they
	// live in the shared /var/run, not in the namespace).
	if socks, err := filepath.Glob(filepath.Join(WireGuardSocketDir, prefix+"*.sock")); err == nil {
		for _, s := range socks {
			if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	links, err := RootLinks(prefix)
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range links {
		if out, err := ipCmd("link", "del", l); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", l, err, out))
		}
	}
	return errors.Join(errs...)
}

// sweepOrphans sweeps the prefixes of earlier runs whose owner process is
// gone (killed by a test timeout, say).
func sweepOrphans(t TB) {
	ents, err := os.ReadDir(ownersDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		prefix := e.Name()
		if !strings.HasPrefix(prefix, "fgo") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(ownersDir, prefix))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if err := Sweep(prefix); err != nil {
			t.Logf("netns: sweeping the orphaned run %s: %v", prefix, err)
			continue
		}
		if strings.HasPrefix(filepath.Base(f[1]), prefix) {
			_ = os.RemoveAll(f[1])
		}
		_ = os.Remove(filepath.Join(ownersDir, prefix))
	}
}

func ipCmd(args ...string) ([]byte, error) {
	return exec.Command("ip", args...).CombinedOutput()
}

// Proc is a process started in a node's namespace.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// Pid is the process id (`ip netns exec` execs in place, so it is the
// program's own).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stop kills the process's group and waits for it; idempotent.
func (p *Proc) Stop() {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
}

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// Spawn starts args inside node's namespace in its own process group,
// killed with the harness; Stop is registered with the driver's Cleanup.
func (m *Mesh) Spawn(node string, args ...string) *Proc {
	n := m.Node(node)
	if n == nil {
		m.t.Fatalf("netns: no node %q", node)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.NS}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("netns: start %v in %s: %v", args, node, err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	m.t.Cleanup(p.Stop)
	return p
}

// Background starts args inside node's namespace and returns a function
// that stops it (its whole process group) and waits for it.
func (m *Mesh) Background(node string, args ...string) (stop func()) {
	return m.Spawn(node, args...).Stop
}

// WaitListening waits until a TCP socket listens on port inside node's
// namespace.
func (m *Mesh) WaitListening(node string, port int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		out, err := m.Exec(node, "ss", "-Hltn", fmt.Sprintf("sport = :%d", port))
		if err == nil && strings.TrimSpace(string(out)) != "" {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
