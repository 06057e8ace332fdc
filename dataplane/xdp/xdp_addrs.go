package xdp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/fips-go/fips/bpf"
)

// watchLocalAddrs gives the XDP program the node's own addresses, so that
// it acts only on frames addressed to this node and passes other hosts'
// FIPS traffic that this host routes (bpf.ReasonNotLocal). Specific bound
// addresses are written once. A wildcard bind receives on every address of
// the host, so those are listed from netlink and followed: a goroutine
// rewrites the set on each address change until stopWatch. Failures after
// the start are counted in the plane's map errors.
func (p *Plane) watchLocalAddrs(bound []netip.Addr) error {
	if !slices.ContainsFunc(bound, netip.Addr.IsUnspecified) {
		return p.obj.SetLocalAddrs(bound)
	}
	updates, stop, list, release, err := subscribeAddrs()
	if err != nil {
		return err
	}
	set := func() error {
		addrs, err := list()
		if err != nil {
			return fmt.Errorf("list host addresses: %w", err)
		}
		return p.obj.SetLocalAddrs(addrs)
	}
	// A full map is no reason to stop: the addresses it could not take
	// are counted, and frames to them pass XDP to the UDP socket.
	if err := set(); errors.Is(err, bpf.ErrLocalAddrsFull) {
		p.note(err)
	} else if err != nil {
		close(stop)
		for range updates { // the subscription ends after stop
		}
		release()
		return err
	}
	p.stopAddrs, p.addrsDone = stop, make(chan struct{})
	go func() {
		defer close(p.addrsDone)
		defer release()
		for range updates {
			// Drain what queued meanwhile, then read the whole set:
			// simpler and safer than applying each event.
			for len(updates) > 0 {
				<-updates
			}
			p.note(set())
		}
	}()
	return nil
}

// stopWatch ends the address watch, if one runs, and waits for it.
func (p *Plane) stopWatch() {
	if p.stopAddrs == nil {
		return
	}
	close(p.stopAddrs)
	<-p.addrsDone
	p.stopAddrs = nil
}
