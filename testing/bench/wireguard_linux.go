//go:build linux

package bench

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/curve25519"

	"github.com/fips-go/fips/testing/netns"
)

// WGKey is a WireGuard key pair, hex-encoded as UAPI wants it.
type WGKey struct{ Priv, Pub string }

// NewWGKey makes a random key pair.
func NewWGKey(tb netns.TB) WGKey {
	var sk [32]byte
	if _, err := rand.Read(sk[:]); err != nil {
		tb.Fatalf("bench: %v", err)
	}
	sk[0] &= 248
	sk[31] = sk[31]&127 | 64
	pk, err := curve25519.X25519(sk[:], curve25519.Basepoint)
	if err != nil {
		tb.Fatalf("bench: %v", err)
	}
	return WGKey{hex.EncodeToString(sk[:]), hex.EncodeToString(pk)}
}

// WGDevice starts wireguard-go for interface ifname in node's namespace,
// configures it over its UAPI socket (no wg tool needed) with our key,
// listen port and one peer at endpoint allowed ::/0, and returns the
// daemon's pid.
func WGDevice(tb netns.TB, m *netns.Mesh, bin, node, ifname string, self WGKey, port int, peer WGKey, endpoint string) int {
	proc := m.Spawn(node, "env", "WG_PROCESS_FOREGROUND=1", "LOG_LEVEL=error", bin, "-f", ifname)
	sock := filepath.Join(netns.WireGuardSocketDir, ifname+".sock")
	tb.Cleanup(func() { os.Remove(sock) })
	var c net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err = net.Dial("unix", sock); err == nil || time.Now().After(deadline) {
			break
		}
		select {
		case <-proc.Exited():
			tb.Fatalf("bench: wireguard-go %s exited before opening its UAPI socket", ifname)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err != nil {
		tb.Fatalf("bench: wireguard-go %s: UAPI socket: %v", ifname, err)
	}
	defer c.Close()
	req := fmt.Sprintf("set=1\nprivate_key=%s\nlisten_port=%d\npublic_key=%s\nendpoint=%s\nallowed_ip=::/0\n\n",
		self.Priv, port, peer.Pub, endpoint)
	if _, err := c.Write([]byte(req)); err != nil {
		tb.Fatalf("bench: wireguard-go %s: UAPI write: %v", ifname, err)
	}
	resp, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || strings.TrimSpace(resp) != "errno=0" {
		tb.Fatalf("bench: wireguard-go %s: UAPI answer %q: %v", ifname, resp, err)
	}
	return proc.Pid()
}
