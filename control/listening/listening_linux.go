package listening

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxScanned bounds the /proc/net lines read per table.
const maxScanned = 1 << 16

// enumerate lists IPv6 TCP listeners and unconnected UDP sockets of this
// network namespace reachable over fips0, with their owners.
func enumerate(fips0 netip.Addr) []socket {
	var out []socket
	out = append(out, readProcNet("/proc/net/tcp6", "tcp", fips0)...)
	out = append(out, readProcNet("/proc/net/udp6", "udp", fips0)...)
	resolveOwners("/proc", out)
	return out
}

// readProcNet parses one /proc/net/{tcp6,udp6} table. TCP rows count when
// in state LISTEN (0A); UDP has no listen state, so a socket with no
// remote address counts (a connected one has one).
func readProcNet(path, proto string, fips0 netip.Addr) []socket {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseProcNet(bufio.NewScanner(f), proto, fips0)
}

func parseProcNet(sc *bufio.Scanner, proto string, fips0 netip.Addr) []socket {
	var out []socket
	for n := 0; sc.Scan() && n < maxScanned; n++ {
		f := strings.Fields(sc.Text())
		if n == 0 || len(f) < 10 {
			continue // header
		}
		local, lport, ok1 := parseHexAddr(f[1])
		remote, _, ok2 := parseHexAddr(f[2])
		if !ok1 || !ok2 {
			continue
		}
		switch proto {
		case "tcp":
			if f[3] != "0A" {
				continue
			}
		case "udp":
			if !remote.IsUnspecified() {
				continue
			}
		}
		ok, wild := reachable(local, fips0)
		if !ok {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, socket{proto: proto, addr: local, port: lport, inode: inode, wildcard: wild})
	}
	return out
}

// parseHexAddr decodes "ADDR:PORT" as /proc/net prints IPv6: four 32-bit
// words in host byte order, then the port in hex.
func parseHexAddr(s string) (netip.Addr, uint16, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(a) != 32 {
		return netip.Addr{}, 0, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.Addr{}, 0, false
	}
	var b [16]byte
	for i := 0; i < 4; i++ {
		w := binary.BigEndian.Uint32(raw[4*i:])
		binary.NativeEndian.PutUint32(b[4*i:], w)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, false
	}
	return netip.AddrFrom16(b), uint16(port), true
}

// resolveOwners fills pid and comm by finding each socket's inode among
// the processes' open descriptors ("socket:[INODE]"); unreadable
// processes are skipped and their sockets keep pid 0.
func resolveOwners(proc string, socks []socket) {
	want := map[uint64][]int{}
	for i, s := range socks {
		want[s.inode] = append(want[s.inode], i)
	}
	if len(want) == 0 {
		return
	}
	ents, err := os.ReadDir(proc)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil {
			continue
		}
		dir := filepath.Join(proc, e.Name())
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		comm := ""
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
			if err != nil {
				continue
			}
			idx, ok := want[inode]
			if !ok {
				continue
			}
			if comm == "" {
				b, _ := os.ReadFile(filepath.Join(dir, "comm"))
				comm = strings.TrimSpace(string(b))
			}
			for _, i := range idx {
				// A socket shared by several processes (a forked
				// server) is reported with the first owner found.
				if socks[i].pid == 0 {
					socks[i].pid, socks[i].process = uint32(pid), comm
				}
			}
		}
	}
}

// queryFirewall reads table inet fips with nft; no nft, no table or an
// unreadable answer all mean no firewall, as upstream reports it.
func queryFirewall(ctx context.Context) Classifier {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nft", "-j", "list", "table", "inet", "fips").Output()
	if err != nil {
		return Classifier{}
	}
	c, err := ParseRuleset(out)
	if err != nil {
		return Classifier{}
	}
	return c
}
