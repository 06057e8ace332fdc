// Package listening answers show_listening_sockets: the IPv6 sockets of
// this host that a mesh peer could reach through fips0 (bound to the
// wildcard :: or to the node's own address), each with its owning process
// and how the baseline firewall (nftables table inet fips, chain inbound)
// treats its port. Linux only; elsewhere the list is empty and no firewall
// is reported.
package listening

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
)

// MaxSockets bounds the rows of one answer; the rest are counted in
// Report.SocketsOmitted.
const MaxSockets = 4096

// Socket is one row, with upstream's keys (alphabetical, as upstream
// renders them).
type Socket struct {
	Filter       string  `json:"filter"` // accept | drop | unknown | no_firewall
	LocalAddr    string  `json:"local_addr"`
	PID          *uint32 `json:"pid"`     // null when the owner could not be read
	Port         uint16  `json:"port"`    //
	Process      *string `json:"process"` // the owner's comm, null with pid
	Proto        string  `json:"proto"`   // tcp | udp
	WildcardBind bool    `json:"wildcard_bind"`
}

// Report is show_listening_sockets.
type Report struct {
	Fips0Addr      string   `json:"fips0_addr"`
	FirewallActive bool     `json:"firewall_active"`
	Sockets        []Socket `json:"sockets"` // never nil
	// SocketsOmitted counts rows beyond MaxSockets (fips-go addition).
	SocketsOmitted int `json:"sockets_omitted"`
}

// socket is what enumeration finds, before classification.
type socket struct {
	proto    string
	addr     netip.Addr
	port     uint16
	inode    uint64
	pid      uint32 // 0: unknown
	process  string
	wildcard bool
}

// Show builds the report for a node whose fips0 address is fips0.
func Show(ctx context.Context, fips0 netip.Addr) Report {
	socks := enumerate(fips0)
	sortSockets(socks)
	cl := queryFirewall(ctx)
	r := Report{Fips0Addr: fips0.String(), FirewallActive: cl.Active(), Sockets: make([]Socket, 0, min(len(socks), MaxSockets))}
	for i, s := range socks {
		if i == MaxSockets {
			r.SocketsOmitted = len(socks) - MaxSockets
			break
		}
		row := Socket{Filter: string(cl.Classify(s.proto, s.port)), LocalAddr: s.addr.String(), Port: s.port,
			Proto: s.proto, WildcardBind: s.wildcard}
		if s.pid != 0 {
			pid, name := s.pid, s.process
			row.PID, row.Process = &pid, &name
		}
		r.Sockets = append(r.Sockets, row)
	}
	return r
}

// reachable reports whether a socket bound to addr can be reached over
// fips0: the IPv6 wildcard or the node's own address. IPv4 (and
// v4-mapped) binds are not: fips0 carries IPv6 only.
func reachable(addr, fips0 netip.Addr) (ok, wildcard bool) {
	if !addr.Is6() || addr.Is4In6() {
		return false, false
	}
	if addr.IsUnspecified() {
		return true, true
	}
	return addr == fips0, false
}

// sortSockets orders rows by protocol, port, then pid (unknown first),
// so a panel redrawn every refresh does not reshuffle.
func sortSockets(s []socket) {
	slices.SortStableFunc(s, func(a, b socket) int {
		return cmp.Or(cmp.Compare(a.proto, b.proto), cmp.Compare(a.port, b.port), cmp.Compare(a.pid, b.pid))
	})
}
