package node

import (
	"github.com/fips-go/fips/control/identity"
)

// ShortNpub is upstream's short npub: "npub1" and the first and last four
// characters of the rest, joined by "..." (npub1qmc3...el98).
func ShortNpub(npub string) string { return identity.ShortNpub(npub) }

// shortHex is upstream's NodeAddr::short_hex: the first four bytes in hex
// and "...".
func shortHex(a identity.NodeAddr) string { return a.ShortHex() }

// displayName is upstream's peer_display_name: the hosts file's name for a
// (hosts entries override peers' aliases), else a configured peer's alias,
// else the short npub of a node we know the key of as a configured or
// active peer or a session's remote (npub, "" when unknown), else the
// short node address. It reads only what does not change after New, so
// any goroutine may call it.
func (n *Node) displayName(a identity.NodeAddr, npub string) string {
	if n.opts.HostName != nil {
		if h, ok := n.opts.HostName(a); ok {
			return h
		}
	}
	if alias := n.aliases[a]; alias != "" {
		return alias
	}
	if npub == "" {
		npub = n.staticNpubs[a]
	}
	if npub != "" {
		return ShortNpub(npub)
	}
	return shortHex(a)
}

// nameIn is displayName for an address the snapshot may know the key of
// (a peer's or a retry's; our own address is named by its short hex, as
// upstream names it).
func (n *Node) nameIn(s *Snapshot, a identity.NodeAddr) string {
	npub := ""
	if ni, ok := s.Names[a]; ok && a != n.id.NodeAddr() {
		npub = ni.npub
	}
	return n.displayName(a, npub)
}
