package main

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
)

// showTargets are the `fipsctl show` subcommands, in upstream's order; each
// maps to the daemon command show_<target> with '-' as '_'.
var showTargets = []string{
	"status", "peers", "links", "tree", "sessions", "bloom", "mmp", "cache",
	"connections", "transports", "routing", "identity-cache", "native-flows",
	// fips-go: upstream's fipsctl leaves this one to fipstop.
	"listening-sockets",
	// fips-go: Nostr discovery and NAT traversal state per peer.
	"rendezvous",
}

func defaultHostsFile() string { return filepath.Join(config.EtcDir(), "hosts") }

func runShow(e *env, args []string) error {
	syn := "<" + strings.Join(showTargets, "|") + ">"
	fs := newFlags(e, "show", syn)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := wantArgs(fs, 1, "subcommand", syn); err != nil {
		return err
	}
	target := fs.Arg(0)
	for _, t := range showTargets {
		if t == target {
			return query(e, "show_"+strings.ReplaceAll(target, "-", "_"), nil)
		}
	}
	return usageError{msg: fmt.Sprintf("unrecognized subcommand '%s'", target), usage: "show " + syn}
}

func runACL(e *env, args []string) error {
	fs := newFlags(e, "acl", "show")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := wantArgs(fs, 1, "subcommand", "show"); err != nil {
		return err
	}
	if fs.Arg(0) != "show" {
		return usageError{msg: fmt.Sprintf("unrecognized subcommand '%s'", fs.Arg(0)), usage: "acl show"}
	}
	return query(e, "show_acl", nil)
}

func runConnect(e *env, args []string) error {
	fs := newFlags(e, "connect", "PEER ADDRESS TRANSPORT\n\nPEER is an npub or a name from "+e.hostsFile+
		"; TRANSPORT is udp, tcp, tor, nym or ethernet (udp/<instance> for a named UDP instance)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := wantArgs(fs, 3, "<PEER> <ADDRESS> <TRANSPORT>", "<PEER> <ADDRESS> <TRANSPORT>"); err != nil {
		return err
	}
	peer, address, transport := fs.Arg(0), fs.Arg(1), fs.Arg(2)
	if err := validateConnectAddress(address, transport); err != nil {
		return err
	}
	npub, err := resolvePeer(e.hostsFile, peer)
	if err != nil {
		return err
	}
	return query(e, "connect", map[string]string{"npub": npub, "address": address, "transport": transport})
}

func runDisconnect(e *env, args []string) error {
	fs := newFlags(e, "disconnect", "PEER\n\nPEER is an npub or a name from "+e.hostsFile)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := wantArgs(fs, 1, "<PEER>", "<PEER>"); err != nil {
		return err
	}
	npub, err := resolvePeer(e.hostsFile, fs.Arg(0))
	if err != nil {
		return err
	}
	return query(e, "disconnect", map[string]string{"npub": npub})
}

// wantArgs checks a command's positional count, with clap's wording: a
// missing subcommand, the missing arguments of names (space-separated),
// or the first one too many.
func wantArgs(fs flagSet, n int, names, syn string) error {
	switch {
	case fs.NArg() > n:
		return usageError{msg: fmt.Sprintf("unexpected argument '%s' found", fs.Arg(n)), usage: fs.Name() + " " + syn}
	case fs.NArg() < n && names == "subcommand":
		return usageError{msg: "a subcommand is required", usage: fs.Name() + " " + syn}
	case fs.NArg() < n:
		missing := strings.Fields(names)[fs.NArg():]
		return usageError{msg: "the following required arguments were not provided:\n  " + strings.Join(missing, "\n  "),
			usage: fs.Name() + " " + syn}
	}
	return nil
}

// query sends one command to the daemon and prints the response data as
// upstream fipsctl does (serde_json's pretty printer). Failures come back
// as one-line errors in upstream's wording.
func query(e *env, command string, params any) error {
	socket := e.socket
	if runtime.GOOS == "windows" && socket != "" {
		if _, ok := ctl.ParsePort(socket); !ok {
			fmt.Fprintf(e.stderr, "warning: invalid port '%s', using default %d\n", socket, ctl.DefaultControlPort)
		}
	}
	data, err := ctl.Call(context.Background(), socket, command, params)
	if err != nil {
		return err
	}
	out, err := ctl.Pretty(data)
	if err != nil {
		return fmt.Errorf("invalid response JSON: %v", err)
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", out)
	return err
}

// sentence is an error worded as upstream fipsctl prints it, its second
// line (the hint) included.
type sentence string

func (s sentence) Error() string { return string(s) }

// validateConnectAddress rejects fd00::/8 mesh addresses as udp, tcp or
// ethernet endpoints: they name nodes inside the mesh, not places a
// transport can reach (upstream issue #61).
func validateConnectAddress(address, transport string) error {
	switch transport {
	case "udp", "tcp", "ethernet":
	default:
		return nil
	}
	if !isMeshAddress(address) {
		return nil
	}
	return sentence(fmt.Sprintf("'%s' is a FIPS mesh address (fd00::/8), not a reachable %s endpoint.\n"+
		"Provide the peer's routable IP/hostname and port (e.g., '192.0.2.1:2121' or 'peer.example.com:2121').",
		address, transport))
}

// isMeshAddress reports whether address is an fd00::/8 IPv6 literal, bare
// ("fd9d::1"), bracketed with a port ("[fd9d::1]:2121") or bare with a
// numeric port ("fd9d::1:2121", ambiguous but accepted as upstream does).
func isMeshAddress(address string) bool {
	mesh := func(a netip.Addr) bool { return a.Is6() && a.As16()[0] == 0xfd }
	if a, err := netip.ParseAddr(address); err == nil && a.Zone() == "" {
		return mesh(a)
	}
	if ap, err := netip.ParseAddrPort(address); err == nil && ap.Addr().Is6() {
		return mesh(ap.Addr())
	}
	if i := strings.LastIndexByte(address, ':'); i >= 0 {
		host, port := address[:i], address[i+1:]
		if port != "" && strings.Trim(port, "0123456789") == "" {
			host = strings.TrimRight(strings.TrimLeft(host, "["), "]")
			if a, err := netip.ParseAddr(host); err == nil && a.Is6() && a.Zone() == "" {
				return mesh(a)
			}
		}
	}
	return false
}

// resolvePeer returns peer itself when it looks like an npub, else the npub
// the hosts file gives that name.
func resolvePeer(hostsFile, peer string) (string, error) {
	if strings.HasPrefix(peer, "npub1") {
		return peer, nil
	}
	if npub, ok := lookupHost(hostsFile, peer); ok {
		return npub, nil
	}
	return "", sentence(fmt.Sprintf("unknown host '%s'\nNot found in %s and not an npub.", peer, hostsFile))
}

// lookupHost reads a FIPS hosts file ("hostname npub" per line, '#'
// comments, invalid lines skipped, later lines winning, names matched
// case-insensitively), as upstream's HostMap::load_hosts_file does.
func lookupHost(path, name string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	want := strings.ToLower(name)
	var found string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !validHostname(fields[0]) {
			continue
		}
		if _, err := identity.DecodeNpub(fields[1]); err != nil {
			continue
		}
		if strings.ToLower(fields[0]) == want {
			found = fields[1]
		}
	}
	return found, found != ""
}

// validHostname is upstream's hosts-file name rule: 1–63 ASCII letters,
// digits and inner hyphens, not starting with "npub1".
func validHostname(h string) bool {
	if h == "" || len(h) > 63 || strings.HasPrefix(strings.ToLower(h), "npub1") ||
		h[0] == '-' || h[len(h)-1] == '-' {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
