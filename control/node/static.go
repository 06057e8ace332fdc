package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
)

// resolveTimeout bounds one address resolution at a dial or connect.
const resolveTimeout = 5 * time.Second

// transportFor picks the transport a peer address names: "udp" is the
// first UDP instance, "udp/<name>" a named one.
func (n *Node) transportFor(sel string) (transport.Transport, error) {
	return n.transportForAddr(sel, "")
}

// onInterface is a transport bound to one network interface (Ethernet).
type onInterface interface{ Interface() string }

// transportForAddr is transportFor knowing the address: an unqualified
// "ethernet" picks the instance on the interface the address names
// ("eth0/aa:bb:cc:dd:ee:ff"), as upstream resolves it.
func (n *Node) transportForAddr(sel, addr string) (transport.Transport, error) {
	typ, name, qualified := strings.Cut(sel, "/")
	iface, _, byIface := strings.Cut(addr, "/")
	byIface = byIface && !qualified && typ == "ethernet"
	for _, id := range n.order {
		t := n.transports[id]
		if t.Type() != typ || n.isBootstrap(id) {
			continue
		}
		if byIface {
			if oi, ok := t.(onInterface); !ok || oi.Interface() != iface {
				continue
			}
		}
		if !qualified || t.Name() == name {
			return t, nil
		}
	}
	switch {
	case qualified:
		return nil, fmt.Errorf("no %s transport instance named %q", typ, name)
	case byIface:
		return nil, fmt.Errorf("no operational Ethernet transport for interface '%s'", iface)
	}
	return nil, fmt.Errorf("no %s transport configured", typ)
}

// targets turns configured addresses into what the link layer resolves
// at each dial attempt, best priority first. Addresses naming no
// transport are logged and skipped.
func (n *Node) targets(addrs []PeerAddress) []peer.StaticAddress {
	sorted := append([]PeerAddress(nil), addrs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Priority < sorted[j].Priority })
	var out []peer.StaticAddress
	for _, a := range sorted {
		t, err := n.transportForAddr(a.Transport, a.Addr)
		if err != nil {
			n.log.Warn("skipping peer address", "addr", a.Addr, "transport", a.Transport, "error", err)
			continue
		}
		out = append(out, peer.StaticAddress{Transport: t.ID(), Addr: a.Addr})
	}
	return out
}

func (n *Node) addStatic(now time.Time, sp StaticPeer) {
	targets := n.targets(sp.Addresses)
	if len(targets) == 0 {
		n.log.Warn("configured peer has no usable address", "npub", sp.PublicKey.Npub(), "alias", sp.Alias)
	}
	n.peers.AddStatic(now, peer.StaticPeer{PublicKey: sp.PublicKey, Alias: sp.Alias, Targets: targets, AutoReconnect: sp.AutoReconnect,
		WireFormat: sp.WireFormat})
}

// ResolveStatic implements peer.StaticResolver: a static peer's addresses
// are resolved at every dial attempt, so a host name that did not resolve
// at startup, or now resolves elsewhere, is dialled where it is now.
// Numeric addresses are answered at once; anything naming a host is looked
// up off the loop and handed back with StaticResolved.
func (n *Node) ResolveStatic(na identity.NodeAddr, targets []peer.StaticAddress) (peer.Resolution, bool) {
	numeric := true
	for _, t := range targets {
		if _, err := netip.ParseAddrPort(t.Addr); err != nil {
			numeric = false
			break
		}
	}
	ctx := n.runCtx
	// The transports are looked up here, on the loop: the map changes
	// when a traversal transport is adopted.
	ts := make(map[transport.ID]transport.Transport, len(targets))
	for _, tg := range targets {
		if t := n.transports[tg.Transport]; t != nil {
			ts[tg.Transport] = t
		}
	}
	if numeric || ctx == nil {
		if ctx == nil {
			ctx = context.Background()
		}
		return n.resolveTargets(ctx, ts, targets), true
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		res := n.resolveTargets(ctx, ts, targets)
		// Gone with the loop: the answer has no one to dial.
		_, _ = n.Do(ctx, func(now time.Time) any {
			n.peers.StaticResolved(now, na, res)
			return nil
		})
	}()
	return peer.Resolution{}, false
}

// resolveTargets resolves each target on its transport (each bounded by
// resolveTimeout), keeping the order; a destination no packet can reach
// counts as unresolved.
func (n *Node) resolveTargets(ctx context.Context, ts map[transport.ID]transport.Transport, targets []peer.StaticAddress) peer.Resolution {
	var res peer.Resolution
	var errs []error
	for _, tg := range targets {
		t := ts[tg.Transport]
		if t == nil {
			errs = append(errs, fmt.Errorf("%s: no transport %d", tg.Addr, tg.Transport))
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		a, err := n.resolveAddr(rctx, t, tg.Addr)
		cancel()
		if err == nil {
			err = transport.CheckAddr(a)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("resolve %s: %w", tg.Addr, err))
			continue
		}
		res.Candidates = append(res.Candidates, peer.Candidate{Transport: t.ID(), Addr: a})
	}
	res.Err = errors.Join(errs...)
	return res
}

// resolveAddr is the transport's ResolveAddr unless Options.Resolve
// replaces it.
func (n *Node) resolveAddr(ctx context.Context, t transport.Transport, s string) (transport.Addr, error) {
	if n.opts.Resolve != nil {
		return n.opts.Resolve(ctx, t, s)
	}
	return t.ResolveAddr(ctx, s)
}
