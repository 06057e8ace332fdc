package node

import (
	"context"
	"encoding/json"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/tree"
)

// registerMesh installs the routing-layer commands.
func (n *Node) registerMesh(r ctlRegistry) {
	r.Register("show_tree", func(context.Context, json.RawMessage) (any, error) { return n.showTree(), nil })
	r.Register("show_bloom", func(context.Context, json.RawMessage) (any, error) { return n.showBloom(), nil })
}

// TreePeerJSON is one show_tree peer: the tree's view plus the node's
// display name.
type TreePeerJSON struct {
	tree.PeerSnapshot
	DisplayName string `json:"display_name"`
}

// TreeJSON is show_tree: the tree snapshot plus what the node knows about
// names.
type TreeJSON struct {
	tree.Snapshot
	RootNpub          *string        `json:"root_npub"`
	ParentDisplayName string         `json:"parent_display_name"`
	Peers             []TreePeerJSON `json:"peers"`
}

func (s *Snapshot) displayName(a identity.NodeAddr) string {
	if ni, ok := s.Names[a]; ok {
		return displayName(ni.alias, ni.npub)
	}
	return a.Short()
}

func (n *Node) showTree() TreeJSON {
	s := n.Snapshot()
	out := TreeJSON{Snapshot: s.Tree, ParentDisplayName: s.displayName(s.Tree.Parent), Peers: []TreePeerJSON{}}
	if ni, ok := s.Names[s.Tree.Root]; ok {
		out.RootNpub = &ni.npub
	}
	for _, p := range s.Tree.Peers {
		out.Peers = append(out.Peers, TreePeerJSON{PeerSnapshot: p, DisplayName: s.displayName(p.NodeAddr)})
	}
	return out
}

func (n *Node) showBloom() bloom.Snapshot {
	s := n.Snapshot()
	b := s.Bloom
	rows := make([]bloom.PeerFilterRow, len(b.PeerFilters))
	for i, r := range b.PeerFilters {
		r.DisplayName = s.displayName(r.Peer)
		rows[i] = r
	}
	b.PeerFilters = rows
	return b
}
