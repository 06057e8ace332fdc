package node

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
)

// resolveTimeout bounds one address resolution at startup or connect.
const resolveTimeout = 5 * time.Second

// transportFor picks the transport a peer address names: "udp" is the
// first UDP instance, "udp/<name>" a named one.
func (n *Node) transportFor(sel string) (transport.Transport, error) {
	typ, name, qualified := strings.Cut(sel, "/")
	for _, id := range n.order {
		t := n.transports[id]
		if t.Type() != typ {
			continue
		}
		if !qualified || t.Name() == name {
			return t, nil
		}
	}
	if qualified {
		return nil, fmt.Errorf("no %s transport instance named %q", typ, name)
	}
	return nil, fmt.Errorf("no %s transport configured", typ)
}

// resolve turns configured addresses into dial candidates, best priority
// first. Unresolvable ones are logged and skipped.
func (n *Node) resolve(ctx context.Context, addrs []PeerAddress) []peer.Candidate {
	sorted := append([]PeerAddress(nil), addrs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Priority < sorted[j].Priority })
	var out []peer.Candidate
	for _, a := range sorted {
		t, err := n.transportFor(a.Transport)
		if err != nil {
			n.log.Warn("skipping peer address", "addr", a.Addr, "transport", a.Transport, "error", err)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		ta, err := t.ResolveAddr(rctx, a.Addr)
		cancel()
		if err != nil {
			n.log.Warn("cannot resolve peer address", "addr", a.Addr, "transport", a.Transport, "error", err)
			continue
		}
		out = append(out, peer.Candidate{Transport: t.ID(), Addr: ta})
	}
	return out
}

func (n *Node) addStatic(ctx context.Context, now time.Time, sp StaticPeer) {
	cands := n.resolve(ctx, sp.Addresses)
	if len(cands) == 0 {
		n.log.Warn("configured peer has no usable address", "npub", sp.PublicKey.Npub(), "alias", sp.Alias)
	}
	n.peers.AddStatic(now, peer.StaticPeer{PublicKey: sp.PublicKey, Alias: sp.Alias, Addresses: cands, AutoReconnect: sp.AutoReconnect})
}
