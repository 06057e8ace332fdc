package node

import (
	"sync"

	"github.com/fips-go/fips/control/identity"
)

// ShortNpub is upstream's short npub: "npub1" and the first and last four
// characters of the rest, joined by "..." (npub1qmc3...el98).
func ShortNpub(npub string) string { return identity.ShortNpub(npub) }

// shortHex is upstream's NodeAddr::short_hex: the first four bytes in hex
// and "...".
func shortHex(a identity.NodeAddr) string { return a.ShortHex() }

// displayName is upstream's peer_display_name: the hosts file's name for a
// (hosts entries override peers' aliases), else the short npub of a node
// a probe named (seededNames), else a configured peer's alias, else the
// short npub of a node we know the key of as a configured or active peer
// or a session's remote (npub, "" when unknown), else the short node
// address. It reads only what does not change after New and the locked
// seededNames, so any goroutine may call it.
func (n *Node) displayName(a identity.NodeAddr, npub string) string {
	if n.opts.HostName != nil {
		if h, ok := n.opts.HostName(a); ok {
			return h
		}
	}
	if s := n.seeded.npub(a); s != "" {
		return ShortNpub(s)
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

// seededNames are the nodes a probe named, by npub. Upstream's probe_start
// writes the target's short npub into the table its display names read
// aliases from (peer_aliases), over a configured peer's alias, and nothing
// takes it out again: from then on the node is named by its short npub
// everywhere — in show_identity_cache, where a node that is neither a
// peer nor a session's remote was its short address, and for an aliased
// peer, whose alias it replaces. Written on the loop, read anywhere.
type seededNames struct {
	mu    sync.RWMutex
	npubs map[identity.NodeAddr]string
	order []identity.NodeAddr // insertion order, oldest first
	max   int
}

// add names a by npub. Past max names the oldest is forgotten (fips-go:
// upstream's table grows with every node probed).
func (s *seededNames) add(a identity.NodeAddr, npub string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.npubs == nil {
		s.npubs = map[identity.NodeAddr]string{}
	}
	if _, ok := s.npubs[a]; ok {
		return
	}
	s.npubs[a] = npub
	s.order = append(s.order, a)
	if len(s.order) > s.max {
		delete(s.npubs, s.order[0])
		s.order = append(s.order[:0], s.order[1:]...)
	}
}

// npub is the npub a was named by, "" when none.
func (s *seededNames) npub(a identity.NodeAddr) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.npubs[a]
}
