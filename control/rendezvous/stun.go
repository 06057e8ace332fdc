package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pion/stun/v3"
)

// STUN timeouts per server: traversal and the advert's public-IP lookup.
const (
	TraversalSTUNTimeout = 2 * time.Second
	AdvertSTUNTimeout    = 5 * time.Second
)

// ErrSTUN is a failed STUN exchange.
var ErrSTUN = errors.New("stun")

// ParseSTUNServer splits "stun:host:port" or "host:port" (IPv6 in
// brackets) into host and port.
func ParseSTUNServer(s string) (host string, port uint16, err error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "stun:")
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("%w: server %q: %w", ErrSTUN, s, err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 || h == "" {
		return "", 0, fmt.Errorf("%w: server %q: bad host or port", ErrSTUN, s)
	}
	return h, uint16(n), nil
}

// resolveSTUN resolves a server for a socket of family v4 (or v6): a
// literal IP is used as is, a name's first answer of that family.
func resolveSTUN(ctx context.Context, server string, v4 bool) (netip.AddrPort, error) {
	host, port, err := ParseSTUNServer(server)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), port), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: resolve %s: %w", ErrSTUN, host, err)
	}
	for _, ip := range ips {
		if ip = ip.Unmap(); ip.Is4() == v4 {
			return netip.AddrPortFrom(ip, port), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%w: %s has no address of the socket's family", ErrSTUN, host)
}

// BindingRequest is the 20-byte request upstream sends: Binding Request,
// length 0, the magic cookie, a random transaction id, no attributes.
func BindingRequest() (*stun.Message, error) {
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		return nil, fmt.Errorf("%w: build request: %w", ErrSTUN, err)
	}
	return m, nil
}

// ParseBindingResponse decodes a Binding Success for txid and returns the
// first XOR-MAPPED-ADDRESS or MAPPED-ADDRESS in it.
func ParseBindingResponse(b []byte, txid [stun.TransactionIDSize]byte) (netip.AddrPort, error) {
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if err := m.Decode(); err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: decode: %w", ErrSTUN, err)
	}
	if m.Type != stun.BindingSuccess {
		return netip.AddrPort{}, fmt.Errorf("%w: message type %s is not a binding success", ErrSTUN, m.Type)
	}
	if m.TransactionID != txid {
		return netip.AddrPort{}, fmt.Errorf("%w: transaction id mismatch", ErrSTUN)
	}
	for _, a := range m.Attributes {
		var ip net.IP
		var port int
		switch a.Type {
		case stun.AttrXORMappedAddress:
			var x stun.XORMappedAddress
			if x.GetFrom(m) != nil {
				continue
			}
			ip, port = x.IP, x.Port
		case stun.AttrMappedAddress:
			var x stun.MappedAddress
			if x.GetFrom(m) != nil {
				continue
			}
			ip, port = x.IP, x.Port
		default:
			continue
		}
		addr, ok := netip.AddrFromSlice(ip)
		if !ok || port <= 0 || port > 65535 {
			continue
		}
		return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
	}
	return netip.AddrPort{}, fmt.Errorf("%w: no mapped address in the response", ErrSTUN)
}

// STUNResult is the reflexive address and the server that reported it.
type STUNResult struct {
	Reflexive netip.AddrPort
	Server    string
}

// Discover asks each server in turn, once each with no retransmit, on
// conn itself (so the NAT mapping is the one the punch will use), and
// returns the first answer. Datagrams that are not the answer are read
// and dropped. conn's read deadline is cleared on return.
func Discover(ctx context.Context, conn *net.UDPConn, servers []string, perServer time.Duration) (STUNResult, error) {
	v4 := true
	if la, ok := conn.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil && !la.IP.IsUnspecified() {
		v4 = false
	}
	defer conn.SetReadDeadline(time.Time{})
	var errs []error
	buf := make([]byte, 1500)
	for _, s := range servers {
		if ctx.Err() != nil {
			return STUNResult{}, ctx.Err()
		}
		r, err := exchange(ctx, conn, s, v4, perServer, buf)
		if err == nil {
			return STUNResult{Reflexive: r, Server: s}, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s, err))
	}
	if len(errs) == 0 {
		return STUNResult{}, fmt.Errorf("%w: no servers configured", ErrSTUN)
	}
	return STUNResult{}, errors.Join(errs...)
}

func exchange(ctx context.Context, conn *net.UDPConn, server string, v4 bool, timeout time.Duration, buf []byte) (netip.AddrPort, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	to, err := resolveSTUN(rctx, server, v4)
	if err != nil {
		return netip.AddrPort{}, err
	}
	req, err := BindingRequest()
	if err != nil {
		return netip.AddrPort{}, err
	}
	if _, err := conn.WriteToUDPAddrPort(req.Raw, to); err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: send: %w", ErrSTUN, err)
	}
	deadline, _ := rctx.Deadline()
	if err := conn.SetReadDeadline(deadline); err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %w", ErrSTUN, err)
	}
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				return netip.AddrPort{}, ctx.Err()
			}
			return netip.AddrPort{}, fmt.Errorf("%w: no answer within %s: %w", ErrSTUN, timeout, err)
		}
		_ = from
		if r, err := ParseBindingResponse(buf[:n], req.TransactionID); err == nil {
			return r, nil
		}
	}
}

// MaxLocalCandidates bounds the host candidates one offer or answer
// carries. Upstream sets no bound (its list is as long as the host's
// private addresses); this one is far above any ordinary host's count.
const MaxLocalCandidates = 64

// Egress probe destinations: a UDP connect to them picks the source
// address of the default route and sends nothing.
const (
	egressProbe4 = "8.8.8.8:80"
	egressProbe6 = "[2001:4860:4860::8888]:80"
)

// LocalCandidates are upstream's host candidates for port
// (local_addresses_from_port): the private (RFC 1918, ULA) addresses of
// up, non-loopback interfaces, IPv4 ones first as Linux's getifaddrs lists
// them, then the source address of the IPv4 and of the IPv6 default route
// whatever its range; unspecified addresses skipped, duplicates removed,
// at most MaxLocalCandidates. (Upstream also adds the bound address of
// 0.0.0.0:port and [::]:port, which is always unspecified and so never
// kept.)
func LocalCandidates(port uint16) []netip.AddrPort {
	var egress []netip.Addr
	for _, p := range []struct{ network, to string }{{"udp4", egressProbe4}, {"udp6", egressProbe6}} {
		if ip, ok := egressAddr(p.network, p.to); ok {
			egress = append(egress, ip)
		}
	}
	ips := hostCandidates(interfaceAddrs(), egress)
	out := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		out[i] = netip.AddrPortFrom(ip, port)
	}
	return out
}

// hostCandidates orders and filters candidate addresses: the private ones
// of ifaceAddrs, then every one of egress, unspecified ones skipped,
// duplicates removed, at most MaxLocalCandidates.
func hostCandidates(ifaceAddrs, egress []netip.Addr) []netip.Addr {
	var out []netip.Addr
	add := func(ip netip.Addr) {
		ip = ip.Unmap()
		if ip.IsUnspecified() || !ip.IsValid() || slices.Contains(out, ip) || len(out) >= MaxLocalCandidates {
			return
		}
		out = append(out, ip)
	}
	for _, v4 := range []bool{true, false} {
		for _, ip := range ifaceAddrs {
			if ip.Unmap().Is4() == v4 && ip.IsPrivate() {
				add(ip)
			}
		}
	}
	for _, ip := range egress {
		add(ip)
	}
	return out
}

// interfaceAddrs are the addresses of up, non-loopback interfaces, in
// interface order.
func interfaceAddrs() []netip.Addr {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil {
				out = append(out, pfx.Addr())
			}
		}
	}
	return out
}

// egressAddr is the source address the kernel picks toward to; connecting
// a UDP socket sends nothing.
func egressAddr(network, to string) (netip.Addr, bool) {
	c, err := net.Dial(network, to)
	if err != nil {
		return netip.Addr{}, false
	}
	defer c.Close()
	ua, ok := c.LocalAddr().(*net.UDPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(ua.IP)
	return ip.Unmap(), ok
}
