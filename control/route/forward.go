package route

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// Delivery is a SessionDatagram addressed to this node, for the session
// layer.
type Delivery struct {
	Src     identity.NodeAddr // the datagram's source
	From    identity.NodeAddr // the link peer it arrived from
	TTL     uint8             // as received; delivery ignores it
	PathMTU uint16            // forward-path minimum link MTU, as received
	CE      bool              // the carrying link frame had CE set
	Payload []byte            // the FSP packet; aliases the message passed in
}

// HandleSessionDatagram processes a SessionDatagram (msg starts with its
// type byte 0x00) received from the peer from on a link frame whose CE
// flag was ceIn. In order: decode; warm the coordinate cache from any
// plaintext coordinates in the FSP payload (whatever happens next); deliver
// when addressed to us (TTL not checked); drop when the decremented TTL
// would be 0; choose the next hop (none: send CoordsRequired or PathBroken
// back to the source, rate limited per destination); forward with the TTL
// decremented, the path MTU lowered to the next hop's link MTU and CE
// relayed (CE_in or the next hop congested); a send refused for size sends
// MtuExceeded back to the source.
//
// A forwarded datagram is rewritten in msg itself (TTL, path MTU) and
// sent from there: msg must be writable and is changed.
//
// It returns a Delivery for datagrams addressed to us (the router's own,
// valid until the next call: nothing is allocated per packet), nil after a
// successful forward, and a typed error (ErrDecode, ErrTTLExhausted,
// ErrNoRoute, ErrMTUExceeded, ErrSend) for a drop.
func (r *Router) HandleSessionDatagram(now time.Time, from identity.NodeAddr, ceIn bool, msg []byte) (*Delivery, error) {
	f := &r.stats.Forwarding
	size := uint64(max(len(msg)-1, 0)) // upstream counts the message without its type byte
	f.ReceivedPackets++
	f.ReceivedBytes += size
	dg, err := wire.ParseSessionDatagram(msg)
	if err != nil {
		f.DecodeErrorPackets++
		f.DecodeErrorBytes += size
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	n := ms(now)
	r.warm(n, dg, size)

	if dg.Dest == r.self {
		f.DeliveredPackets++
		f.DeliveredBytes += size
		r.delivery = Delivery{Src: dg.Src, From: from, TTL: dg.TTL, PathMTU: dg.PathMTU, CE: ceIn, Payload: dg.Payload}
		return &r.delivery, nil
	}
	if dg.TTL <= 1 {
		f.TTLExhaustedPackets++
		f.TTLExhaustedBytes += size
		return nil, fmt.Errorf("%w: datagram %s→%s arrived with ttl %d", ErrTTLExhausted, dg.Src.Short(), dg.Dest.Short(), dg.TTL)
	}
	next, _, ok := r.findNextHop(n, dg.Dest)
	if !ok {
		f.DropNoRoutePackets++
		f.DropNoRouteBytes += size
		r.sendRoutingError(n, dg.Dest, dg.Src)
		return nil, fmt.Errorf("%w: %s", ErrNoRoute, dg.Dest.Short())
	}

	congested := r.links.Congested(next)
	ceOut := ceIn || congested
	// Forward in place: only the TTL and the path MTU change.
	buf := msg
	if err := ForwardInPlace(buf, r.links.LinkMTU(next)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSend, err)
	}
	if congested {
		r.stats.Congestion.CongestionDetected++
		if r.fwdLog.Enabled(context.Background(), slog.LevelDebug) {
			r.fwdLog.Debug("Congestion detected, CE flag set on forwarded packet", "next_hop", r.name(next))
		}
	}
	if err := r.links.Send(next, ceOut, buf); err != nil {
		if mtu, isMTU := mtuOf(err); isMTU {
			f.DropMTUExceededPackets++
			f.DropMTUExceededBytes += size
			r.sendMtuExceeded(n, dg.Dest, dg.Src, mtu)
			return nil, fmt.Errorf("%w: forwarding to %s: %w", ErrMTUExceeded, next.Short(), err)
		}
		f.DropSendErrorPackets++
		f.DropSendErrorBytes += size
		return nil, fmt.Errorf("%w: forwarding to %s: %w", ErrSend, next.Short(), err)
	}
	f.ForwardedPackets++
	f.ForwardedBytes += uint64(len(buf))
	f.routeClass(r.classify(n, dg.Dest, next))
	if ceOut {
		r.stats.Congestion.CEForwarded++
	}
	return nil, nil
}

// Learn warms the coordinate cache from a SessionDatagram message (type
// byte first) a dataplane worker forwarded, as HandleSessionDatagram does
// with every datagram before forwarding it; nothing else is counted or
// done. A message that does not decode is ignored.
func (r *Router) Learn(now time.Time, msg []byte) {
	dg, err := wire.ParseSessionDatagram(msg)
	if err != nil {
		return
	}
	r.warm(ms(now), dg, uint64(max(len(msg)-1, 0)))
}

// ForwardInPlace rewrites a SessionDatagram message (type byte first)
// for its next hop: the TTL decremented, the path MTU lowered to the
// next hop's link MTU when that is known (0: unknown). The caller has
// checked the TTL is above 1. The one implementation for the loop's
// router and the dataplane workers.
func ForwardInPlace(msg []byte, linkMTU int) error {
	if len(msg) < wire.SessionDatagramHeaderSize || wire.MsgType(msg[0]) != wire.MsgSessionDatagram || wire.SessionDatagramTTL(msg) <= 1 {
		return ErrTTLExhausted
	}
	return wire.SetSessionDatagramHops(msg, wire.SessionDatagramTTL(msg)-1, foldMTU(wire.SessionDatagramPathMTU(msg), linkMTU))
}

// foldMTU lowers a path MTU to a link MTU when that is known.
func foldMTU(path uint16, link int) uint16 {
	if link > 0 && link < int(path) {
		return uint16(link)
	}
	return path
}

// mtuOf finds a transport MTU refusal in err.
func mtuOf(err error) (uint16, bool) {
	var me *transport.MTUError
	if !errors.As(err, &me) {
		return 0, false
	}
	return uint16(min(max(me.MTU, 0), math.MaxUint16)), true
}

// SendDatagram originates a SessionDatagram carrying the FSP packet fsp to
// dest, with the session TTL and the path MTU set to the first hop's link
// MTU. It fails with ErrNoRoute, ErrMTUExceeded (wrapping the transport's
// *transport.MTUError; no signal is generated for our own packets) or
// ErrSend.
func (r *Router) SendDatagram(now time.Time, dest identity.NodeAddr, fsp []byte) error {
	_, err := r.SendDatagramPathMTU(now, dest, fsp)
	return err
}

// SendDatagramPathMTU is SendDatagram that also returns the path MTU the
// datagram left with, which the session layer seeds its source-side path
// MTU from.
func (r *Router) SendDatagramPathMTU(now time.Time, dest identity.NodeAddr, fsp []byte) (uint16, error) {
	next, _, ok := r.findNextHop(ms(now), dest)
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrNoRoute, dest.Short())
	}
	dg := wire.SessionDatagram{TTL: r.cfg.SessionTTL, PathMTU: foldMTU(math.MaxUint16, r.links.LinkMTU(next)), Src: r.self, Dest: dest, Payload: fsp}
	buf := r.scratch(dg.Len())
	if _, err := dg.MarshalTo(buf); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrSend, err)
	}
	if err := r.links.Send(next, false, buf); err != nil {
		if _, isMTU := mtuOf(err); isMTU {
			return 0, fmt.Errorf("%w: sending to %s: %w", ErrMTUExceeded, next.Short(), err)
		}
		return 0, fmt.Errorf("%w: sending to %s: %w", ErrSend, next.Short(), err)
	}
	r.stats.Forwarding.OriginatedPackets++
	r.stats.Forwarding.OriginatedBytes += uint64(len(buf))
	return dg.PathMTU, nil
}

// sendRoutingError reports to toward (the failed datagram's source) that
// dest could not be routed: PathBroken with dest's cached coordinates when
// there are some, else CoordsRequired. At most one signal per dest per
// ErrorInterval, checked before the reverse hop is looked up; no reverse
// route means no signal (no cascades).
func (r *Router) sendRoutingError(now int64, dest, toward identity.NodeAddr) {
	if r.errLimiter.Take(msTime(now), dest) != ratelimit.Admitted {
		r.stats.Limits.ErrorRateLimited++
		return
	}
	var sig interface {
		Len() int
		MarshalTo([]byte) (int, error)
	}
	if coords, ok := r.cache.get(now, dest); ok {
		sig = wire.PathBroken{DestAddr: dest, Reporter: r.self, LastKnownCoords: wire.CoordsOf(coords...)}
	} else {
		sig = wire.CoordsRequired{DestAddr: dest, Reporter: r.self}
	}
	r.sendSignal(now, toward, dest, sig)
}

// sendMtuExceeded reports the bottleneck MTU to toward, under the same
// per-destination limit.
func (r *Router) sendMtuExceeded(now int64, dest, toward identity.NodeAddr, mtu uint16) {
	if r.errLimiter.Take(msTime(now), dest) != ratelimit.Admitted {
		r.stats.Limits.ErrorRateLimited++
		return
	}
	r.sendSignal(now, toward, dest, wire.MtuExceeded{DestAddr: dest, Reporter: r.self, MTU: mtu})
}

// sendSignal wraps a signal in a new SessionDatagram from us to toward
// (session TTL, path MTU 0xffff and not folded, as upstream sends it) and
// sends it along find_next_hop(toward).
func (r *Router) sendSignal(now int64, toward, dest identity.NodeAddr, sig interface {
	Len() int
	MarshalTo([]byte) (int, error)
}) {
	next, _, ok := r.findNextHop(now, toward)
	if !ok {
		r.stats.Limits.ErrorNoReverseRoute++
		r.log.Debug("cannot route error signal back to source", "src", toward, "dest", dest)
		return
	}
	buf := r.scratch(wire.SessionDatagramHeaderSize + sig.Len())
	if _, err := sig.MarshalTo(buf[wire.SessionDatagramHeaderSize:]); err != nil {
		r.log.Debug("encoding error signal", "err", err)
		return
	}
	dg := wire.SessionDatagram{TTL: r.cfg.SessionTTL, PathMTU: math.MaxUint16, Src: r.self, Dest: toward, Payload: buf[wire.SessionDatagramHeaderSize:]}
	if _, err := dg.MarshalTo(buf); err != nil {
		return
	}
	if err := r.links.Send(next, false, buf); err != nil {
		r.log.Debug("sending error signal", "next_hop", next, "err", err)
	}
}

// warm caches the plaintext coordinates an FSP packet carries, parsing as
// leniently as upstream's transit warming does: SessionSetup and
// SessionAck (phases 1 and 2, any version nibble, payload_len and trailing
// bytes ignored) give the source's and the destination's coordinates; an
// encrypted message (phase 0) with CP set gives whichever of the two lists
// is non-empty, after checking it is a well-formed encrypted header (at
// least 28 bytes, version 0, U clear), else warm_malformed is counted.
func (r *Router) warm(now int64, dg wire.SessionDatagram, size uint64) {
	p := dg.Payload
	if len(p) < wire.FSPPrefixSize {
		return
	}
	switch p[0] & 0x0F {
	case wire.FSPPhaseMsg1, wire.FSPPhaseMsg2:
		src, dst, ok := parseHandshakeCoords(p[wire.FSPPrefixSize:])
		if !ok {
			return
		}
		r.cache.insertOwned(now, dg.Src, src, 0)
		r.cache.insertOwned(now, dg.Dest, dst, 0)
	case wire.FSPPhaseEstablished:
		flags := wire.FSPFlags(p[1])
		if !flags.CoordsPresent() {
			return
		}
		if len(p) < wire.FSPEncryptedMinSize || p[0]>>4 != wire.FSPVersion || flags.Unencrypted() {
			r.stats.Forwarding.WarmMalformedPackets++
			r.stats.Forwarding.WarmMalformedBytes += size
			return
		}
		rest := p[wire.FSPHeaderSize:]
		src, n, ok := parseCoordList(rest, 0)
		if !ok {
			return
		}
		dst, _, ok := parseCoordList(rest[n:], 0)
		if !ok {
			return
		}
		r.cache.insertOwned(now, dg.Src, src, 0) // an empty list is ignored
		r.cache.insertOwned(now, dg.Dest, dst, 0)
	}
}

// parseHandshakeCoords reads a SessionSetup/SessionAck body as upstream's
// decoders do: flags byte, two coordinate lists of at least one entry,
// handshake_len and that many bytes.
func parseHandshakeCoords(b []byte) (src, dst []identity.NodeAddr, ok bool) {
	if len(b) < 1 {
		return nil, nil, false
	}
	b = b[1:]
	src, n, ok := parseCoordList(b, 1)
	if !ok {
		return nil, nil, false
	}
	b = b[n:]
	dst, n, ok = parseCoordList(b, 1)
	if !ok {
		return nil, nil, false
	}
	b = b[n:]
	if len(b) < 2 || len(b)-2 < int(binary.LittleEndian.Uint16(b)) {
		return nil, nil, false
	}
	return src, dst, true
}

// parseCoordList reads a u16le count and that many addresses (at least
// min), returning a fresh slice and the bytes consumed.
func parseCoordList(b []byte, min int) ([]identity.NodeAddr, int, bool) {
	if len(b) < 2 {
		return nil, 0, false
	}
	count := int(binary.LittleEndian.Uint16(b))
	need := 2 + count*identity.NodeAddrSize
	if count < min || len(b) < need {
		return nil, 0, false
	}
	out := make([]identity.NodeAddr, count)
	for i := range out {
		copy(out[i][:], b[2+i*identity.NodeAddrSize:])
	}
	return out, need, true
}
