package netns

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/curve25519"
)

// wgKey is a WireGuard key pair, hex-encoded as UAPI wants it.
type wgKey struct{ priv, pub string }

func newWGKey(tb testing.TB) wgKey {
	tb.Helper()
	var sk [32]byte
	if _, err := rand.Read(sk[:]); err != nil {
		tb.Fatal(err)
	}
	sk[0] &= 248
	sk[31] = sk[31]&127 | 64
	pk, err := curve25519.X25519(sk[:], curve25519.Basepoint)
	if err != nil {
		tb.Fatal(err)
	}
	return wgKey{hex.EncodeToString(sk[:]), hex.EncodeToString(pk)}
}

// wgDevice starts wireguard-go for interface ifname in node's namespace
// and configures it over its UAPI socket (no wg tool needed): our key,
// listen port, one peer at endpoint allowed allowed.
func wgDevice(tb testing.TB, m *Mesh, bin, node, ifname string, self wgKey, port int, peer wgKey, endpoint string, allowed ...string) {
	tb.Helper()
	m.Background(node, "env", "WG_PROCESS_FOREGROUND=1", "LOG_LEVEL=error", bin, "-f", ifname)
	sock := filepath.Join("/var/run/wireguard", ifname+".sock")
	tb.Cleanup(func() { os.Remove(sock) })
	var c net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err = net.Dial("unix", sock); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		tb.Fatalf("wireguard-go %s: UAPI socket: %v", ifname, err)
	}
	defer c.Close()
	var req strings.Builder
	fmt.Fprintf(&req, "set=1\nprivate_key=%s\nlisten_port=%d\npublic_key=%s\nendpoint=%s\n", self.priv, port, peer.pub, endpoint)
	for _, a := range allowed {
		fmt.Fprintf(&req, "allowed_ip=%s\n", a)
	}
	req.WriteString("\n")
	if _, err := c.Write([]byte(req.String())); err != nil {
		tb.Fatalf("wireguard-go %s: UAPI write: %v", ifname, err)
	}
	resp, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || strings.TrimSpace(resp) != "errno=0" {
		tb.Fatalf("wireguard-go %s: UAPI answer %q: %v", ifname, resp, err)
	}
}

// wgChain builds ANCHORS.md item 2b in namespaces: A—B—C over veth, a
// wireguard-go tunnel A↔B and another B↔C (two devices on B, the kernel
// forwarding between them). It returns the mesh and C's tunnel address.
func wgChain(tb testing.TB) (*Mesh, string) {
	tb.Helper()
	m := New(tb, Options{})
	bin := filepath.Join(m.Dir, "wireguard-go")
	if out, err := exec.Command("go", "build", "-o", bin, "golang.zx2c4.com/wireguard").CombinedOutput(); err != nil {
		tb.Fatalf("build wireguard-go: %v\n%s", err, out)
	}
	a, b, c := m.AddNode("wa"), m.AddNode("wb"), m.AddNode("wc")
	ab, bc := m.Link(a, b), m.Link(b, c)
	ka, kb1, kb2, kc := newWGKey(tb), newWGKey(tb), newWGKey(tb), newWGKey(tb)
	ifa, ifb1, ifb2, ifc := m.Prefix+"wa", m.Prefix+"wb1", m.Prefix+"wb2", m.Prefix+"wc"
	wgDevice(tb, m, bin, "wa", ifa, ka, 51820, kb1, ab.AddrB+":51820", "fd00:77::/64", "fd00:78::/64")
	wgDevice(tb, m, bin, "wb", ifb1, kb1, 51820, ka, ab.AddrA+":51820", "fd00:77::1/128")
	wgDevice(tb, m, bin, "wb", ifb2, kb2, 51821, kc, bc.AddrB+":51820", "fd00:78::2/128")
	wgDevice(tb, m, bin, "wc", ifc, kc, 51820, kb2, bc.AddrA+":51821", "fd00:77::/64", "fd00:78::/64")
	for _, s := range [][]string{
		{"wa", "ip", "addr", "add", "fd00:77::1/64", "dev", ifa, "nodad"},
		{"wb", "ip", "addr", "add", "fd00:77::2/64", "dev", ifb1, "nodad"},
		{"wb", "ip", "addr", "add", "fd00:78::1/64", "dev", ifb2, "nodad"},
		{"wc", "ip", "addr", "add", "fd00:78::2/64", "dev", ifc, "nodad"},
		{"wa", "ip", "link", "set", ifa, "up"},
		{"wb", "ip", "link", "set", ifb1, "up"},
		{"wb", "ip", "link", "set", ifb2, "up"},
		{"wc", "ip", "link", "set", ifc, "up"},
		{"wb", "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"},
		{"wa", "ip", "-6", "route", "add", "fd00:78::/64", "dev", ifa},
		{"wc", "ip", "-6", "route", "add", "fd00:77::/64", "dev", ifc},
	} {
		if out, err := m.Exec(s[0], s[1:]...); err != nil {
			tb.Fatalf("wireguard chain: %v: %v\n%s", s, err, out)
		}
	}
	if out, err := m.Exec("wa", "ping", "-6", "-c", "3", "-W", "2", "fd00:78::2"); err != nil {
		tb.Fatalf("wireguard chain ping: %v\n%s", err, out)
	}
	return m, "fd00:78::2"
}
