package listening

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// A /proc/net/tcp6 excerpt (x86-64, little-endian words): a listener on
// [::]:22, one on [::1]:631, one on the node's fd address port 8080, an
// established connection, and a v4-mapped listener on 0.0.0.0:25.
const tcp6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:0277 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
   2: 0000ABFD0000000000000000CDAB0100:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 100 0 0 10 0
   3: 00000000000000000000000000000000:0016 0000ABFD00000000000000000200CDAB:D431 01 00000000:00000000 00:00000000 00000000     0        0 1004 1 0000000000000000 100 0 0 10 0
   4: 0000000000000000FFFF000000000000:0019 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1005 1 0000000000000000 100 0 0 10 0
`

func TestParseProcNet(t *testing.T) {
	if !littleEndian() {
		t.Skip("fixture is little-endian")
	}
	fips0 := netip.MustParseAddr("fdab::1:abcd")
	got := parseProcNet(bufio.NewScanner(strings.NewReader(tcp6)), "tcp", fips0)
	if len(got) != 2 {
		t.Fatalf("%d sockets, want 2: %+v", len(got), got)
	}
	if s := got[0]; s.port != 22 || !s.wildcard || s.addr != netip.IPv6Unspecified() || s.inode != 1001 {
		t.Errorf("wildcard row: %+v", s)
	}
	if s := got[1]; s.port != 8080 || s.wildcard || s.addr != fips0 || s.inode != 1003 {
		t.Errorf("fips0 row: %+v", s)
	}
}

func littleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }

// Sockets this test opens appear with this process as owner: the
// wildcard TCP listener and unconnected UDP socket, not the loopback
// ones; the report has upstream's keys.
func TestShowListsOwnSockets(t *testing.T) {
	tl, err := net.Listen("tcp6", "[::]:0")
	if err != nil {
		t.Skipf("no IPv6 on this machine: %v", err)
	}
	defer tl.Close()
	ul, err := net.ListenPacket("udp6", "[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	lo, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	tport := uint16(tl.Addr().(*net.TCPAddr).Port)
	uport := uint16(ul.LocalAddr().(*net.UDPAddr).Port)
	lport := uint16(lo.Addr().(*net.TCPAddr).Port)

	r := Show(context.Background(), netip.MustParseAddr("fd00::1"))
	comm, _ := os.ReadFile("/proc/self/comm")
	found := map[string]bool{}
	for _, s := range r.Sockets {
		switch {
		case s.Proto == "tcp" && s.Port == tport, s.Proto == "udp" && s.Port == uport:
			found[s.Proto] = true
			if s.PID == nil || int(*s.PID) != os.Getpid() || s.Process == nil || *s.Process != strings.TrimSpace(string(comm)) {
				t.Errorf("%s/%d owner %v %v, want pid %d", s.Proto, s.Port, s.PID, s.Process, os.Getpid())
			}
			if !s.WildcardBind || s.LocalAddr != "::" {
				t.Errorf("%s/%d: wildcard %v addr %s", s.Proto, s.Port, s.WildcardBind, s.LocalAddr)
			}
		case s.Proto == "tcp" && s.Port == lport:
			t.Errorf("loopback listener listed: %+v", s)
		}
	}
	if !found["tcp"] || !found["udp"] {
		t.Fatalf("own sockets missing (tcp %d, udp %d): %+v", tport, uport, r.Sockets)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(raw, &keys)
	for _, k := range []string{"fips0_addr", "firewall_active", "sockets"} {
		if keys[k] == nil {
			t.Errorf("no %q in %s", k, raw)
		}
	}
	if !strings.Contains(string(raw), `"fips0_addr":"fd00::1"`) {
		t.Errorf("fips0_addr: %s", raw)
	}
}
