package tor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
)

// SOCKS5 (RFC 1928) with username/password authentication (RFC 1929),
// CONNECT only: what an outbound Tor stream needs. Tor reads the
// credentials as a circuit isolation key (IsolateSOCKSAuth, on by
// default), so each destination gets circuits of its own, as upstream
// asks for.

// Errors of the SOCKS5 exchange; a refusal by the proxy is *ReplyError.
var (
	// ErrProxyUnreachable: no TCP connection to socks5_addr (Tor not
	// running, or listening elsewhere).
	ErrProxyUnreachable = errors.New("SOCKS5 proxy unreachable (is Tor running and is socks5_addr its SocksPort?)")
	// ErrSOCKSProtocol: the proxy answered with something that is not SOCKS5.
	ErrSOCKSProtocol = errors.New("SOCKS5 protocol error")
	// ErrSOCKSAuth: the proxy refused the offered methods or the credentials.
	ErrSOCKSAuth = errors.New("SOCKS5 authentication refused")
)

// ReplyError is a SOCKS5 CONNECT refused by the proxy: REP, named.
type ReplyError struct{ Code byte }

// SOCKS5 reply codes: RFC 1928's, then Tor's onion-service extensions
// (tor's socks-extensions.txt).
const (
	RepSucceeded           = 0x00
	RepGeneralFailure      = 0x01
	RepNotAllowed          = 0x02
	RepNetworkUnreachable  = 0x03
	RepHostUnreachable     = 0x04
	RepConnectionRefused   = 0x05
	RepTTLExpired          = 0x06
	RepCommandNotSupported = 0x07
	RepAddrTypeUnsupported = 0x08
	RepOnionDescNotFound   = 0xF0
	RepOnionDescInvalid    = 0xF1
	RepOnionIntroFailed    = 0xF2
	RepOnionRendFailed     = 0xF3
	RepOnionMissingAuth    = 0xF4
	RepOnionWrongAuth      = 0xF5
	RepOnionBadAddress     = 0xF6
	RepOnionIntroTimeout   = 0xF7
)

var replyNames = map[byte]string{
	RepGeneralFailure:      "general failure",
	RepNotAllowed:          "connection not allowed by ruleset",
	RepNetworkUnreachable:  "network unreachable",
	RepHostUnreachable:     "host unreachable",
	RepConnectionRefused:   "connection refused",
	RepTTLExpired:          "TTL expired",
	RepCommandNotSupported: "command not supported",
	RepAddrTypeUnsupported: "address type not supported",
	RepOnionDescNotFound:   "onion service descriptor not found",
	RepOnionDescInvalid:    "onion service descriptor invalid",
	RepOnionIntroFailed:    "onion service introduction failed",
	RepOnionRendFailed:     "onion service rendezvous failed",
	RepOnionMissingAuth:    "onion service client authorization missing",
	RepOnionWrongAuth:      "onion service client authorization wrong",
	RepOnionBadAddress:     "invalid onion address",
	RepOnionIntroTimeout:   "onion service introduction timed out",
}

func (e *ReplyError) Error() string {
	if n, ok := replyNames[e.Code]; ok {
		return fmt.Sprintf("SOCKS5 proxy refused CONNECT: %s (0x%02x)", n, e.Code)
	}
	return fmt.Sprintf("SOCKS5 proxy refused CONNECT: unassigned reply code 0x%02x", e.Code)
}

// Is makes a "connection refused" reply errors.Is syscall.ECONNREFUSED,
// so the stream transport counts it as a refused dial.
func (e *ReplyError) Is(target error) bool {
	return e.Code == RepConnectionRefused && target == syscall.ECONNREFUSED
}

// socksTarget is what CONNECT asks for: a host name (an onion, or a
// clearnet name Tor resolves at the exit) or an IP address.
type socksTarget struct {
	Host string // "" when IP is set
	IP   netip.Addr
	Port uint16
}

func (t socksTarget) String() string {
	if t.Host != "" {
		return net.JoinHostPort(t.Host, fmt.Sprint(t.Port))
	}
	return netip.AddrPortFrom(t.IP, t.Port).String()
}

// socksDial opens a stream to target through the SOCKS5 proxy at proxy,
// authenticating with user/pass; ctx bounds the whole exchange.
func socksDial(ctx context.Context, proxy string, target socksTarget, user, pass string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", proxy)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("SOCKS5 proxy %s: %w", proxy, err)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrProxyUnreachable, proxy, err)
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	err = socksHandshake(nc, target, user, pass)
	if !stop() {
		nc.Close()
		return nil, fmt.Errorf("SOCKS5 CONNECT %s via %s: %w", target, proxy, context.Cause(ctx))
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("SOCKS5 CONNECT %s via %s: %w", target, proxy, err)
	}
	return nc, nil
}

// socksHandshake runs method selection, authentication and CONNECT on rw.
func socksHandshake(rw io.ReadWriter, target socksTarget, user, pass string) error {
	if len(user) == 0 || len(user) > 255 || len(pass) == 0 || len(pass) > 255 {
		return fmt.Errorf("%w: username and password must be 1 to 255 bytes", ErrSOCKSAuth)
	}
	if _, err := rw.Write([]byte{5, 1, 2}); err != nil { // version 5, one method: username/password
		return fmt.Errorf("SOCKS5 greeting: %w", err)
	}
	var sel [2]byte
	if _, err := io.ReadFull(rw, sel[:]); err != nil {
		return fmt.Errorf("SOCKS5 method selection: %w", err)
	}
	if err := checkMethodReply(sel); err != nil {
		return err
	}
	auth := make([]byte, 0, 3+len(user)+len(pass))
	auth = append(auth, 1, byte(len(user)))
	auth = append(append(auth, user...), byte(len(pass)))
	auth = append(auth, pass...)
	if _, err := rw.Write(auth); err != nil {
		return fmt.Errorf("SOCKS5 authentication: %w", err)
	}
	var ar [2]byte
	if _, err := io.ReadFull(rw, ar[:]); err != nil {
		return fmt.Errorf("SOCKS5 authentication reply: %w", err)
	}
	if ar[0] != 1 {
		return fmt.Errorf("%w: authentication reply version %d", ErrSOCKSProtocol, ar[0])
	}
	if ar[1] != 0 {
		return fmt.Errorf("%w: username/password status 0x%02x", ErrSOCKSAuth, ar[1])
	}
	req, err := connectRequest(target)
	if err != nil {
		return err
	}
	if _, err := rw.Write(req); err != nil {
		return fmt.Errorf("SOCKS5 CONNECT request: %w", err)
	}
	_, err = readConnectReply(rw)
	return err
}

func checkMethodReply(sel [2]byte) error {
	switch {
	case sel[0] != 5:
		return fmt.Errorf("%w: version %d in method selection", ErrSOCKSProtocol, sel[0])
	case sel[1] == 0xFF:
		return fmt.Errorf("%w: no acceptable method (username/password offered)", ErrSOCKSAuth)
	case sel[1] != 2:
		return fmt.Errorf("%w: proxy chose method 0x%02x, not offered", ErrSOCKSProtocol, sel[1])
	}
	return nil
}

// connectRequest encodes a CONNECT for target.
func connectRequest(t socksTarget) ([]byte, error) {
	req := []byte{5, 1, 0}
	switch {
	case t.Host != "":
		if len(t.Host) > 255 {
			return nil, fmt.Errorf("SOCKS5 CONNECT: host name of %d bytes (at most 255)", len(t.Host))
		}
		req = append(append(req, 3, byte(len(t.Host))), t.Host...)
	case t.IP.Is4():
		a := t.IP.As4()
		req = append(append(req, 1), a[:]...)
	case t.IP.Is6():
		a := t.IP.As16()
		req = append(append(req, 4), a[:]...)
	default:
		return nil, fmt.Errorf("SOCKS5 CONNECT: no target address")
	}
	return binary.BigEndian.AppendUint16(req, t.Port), nil
}

// readConnectReply reads the CONNECT reply and returns the bound address
// it names (a host name is returned as a zero AddrPort).
func readConnectReply(r io.Reader) (netip.AddrPort, error) {
	var h [5]byte // VER REP RSV ATYP and the first address byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return netip.AddrPort{}, fmt.Errorf("SOCKS5 CONNECT reply: %w", err)
	}
	if h[0] != 5 {
		return netip.AddrPort{}, fmt.Errorf("%w: version %d in CONNECT reply", ErrSOCKSProtocol, h[0])
	}
	if h[1] != RepSucceeded {
		return netip.AddrPort{}, &ReplyError{Code: h[1]}
	}
	if h[2] != 0 {
		return netip.AddrPort{}, fmt.Errorf("%w: reserved byte 0x%02x in CONNECT reply", ErrSOCKSProtocol, h[2])
	}
	var rest int // address bytes after the first, plus the port
	switch h[3] {
	case 1:
		rest = 3 + 2
	case 4:
		rest = 15 + 2
	case 3:
		if h[4] == 0 {
			return netip.AddrPort{}, fmt.Errorf("%w: empty bound host name", ErrSOCKSProtocol)
		}
		rest = int(h[4]) + 2
	default:
		return netip.AddrPort{}, fmt.Errorf("%w: address type 0x%02x in CONNECT reply", ErrSOCKSProtocol, h[3])
	}
	b := make([]byte, rest)
	if _, err := io.ReadFull(r, b); err != nil {
		return netip.AddrPort{}, fmt.Errorf("SOCKS5 CONNECT reply address: %w", err)
	}
	port := binary.BigEndian.Uint16(b[rest-2:])
	switch h[3] {
	case 1:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{h[4], b[0], b[1], b[2]}), port), nil
	case 4:
		var a [16]byte
		a[0] = h[4]
		copy(a[1:], b[:15])
		return netip.AddrPortFrom(netip.AddrFrom16(a), port), nil
	}
	return netip.AddrPort{}, nil
}
