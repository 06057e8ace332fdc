package rendezvous

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fips-go/fips/control/wire"
)

// MaxPunchTargets caps the planned remote addresses.
const MaxPunchTargets = 8

// minPunchInterval is the floor of the probe round interval.
const minPunchInterval = 20 * time.Millisecond

// SessionHash is the first 16 bytes of SHA-256 of the session id.
func SessionHash(sessionID string) [16]byte {
	h := sha256.Sum256([]byte(sessionID))
	var out [16]byte
	copy(out[:], h[:16])
	return out
}

// Refusal tallies why candidate addresses were not planned (upstream's
// PunchTargetTally).
type Refusal struct {
	// Offered counts the peer's candidates, its reflexive address included;
	// Admitted the planned targets after the cap (pairs of ours and theirs,
	// so one remote address may count more than once).
	Offered, Admitted, Unparsable, ZeroPort, Unroutable, OffSubnet, Capped int
	// Reflexive names the check that refused the peer's reflexive address
	// ("unparsable", "zeroport", "never-routable"), empty when it was not
	// refused. Sample is the first ip:port refused as never-routable or
	// zero-port, kept to one so peer-supplied text cannot grow the record.
	Reflexive, Sample string
}

// Suspicious is upstream's WARN condition for a plan's refusals: shapes
// no honest peer produces, an entirely refused offer, or a refused
// reflexive address. Off-subnet refusals alone are routine.
func (r Refusal) Suspicious() bool {
	return r.Unparsable > 0 || r.ZeroPort > 0 || r.Unroutable > 0 || r.Capped > 0 ||
		(r.Offered > 0 && r.Admitted == 0) || r.Reflexive != ""
}

// Quiet is upstream's condition for logging nothing about a plan.
func (r Refusal) Quiet() bool { return r.Offered <= r.Admitted && r.Capped == 0 }

// Refusal classes (upstream's RejectClass labels).
const (
	refuseUnparsable = "unparsable"
	refuseZeroPort   = "zeroport"
	refuseUnroutable = "never-routable"
	refuseOffSubnet  = "off-subnet"
)

func (r *Refusal) refuse(class string, a TraversalAddress, reflexive bool) {
	switch {
	case reflexive:
		r.Reflexive = class
	case class == refuseUnparsable:
		r.Unparsable++
	case class == refuseZeroPort:
		r.ZeroPort++
	case class == refuseUnroutable:
		r.Unroutable++
	case class == refuseOffSubnet:
		r.OffSubnet++
	}
	if r.Sample == "" && (class == refuseUnroutable || class == refuseZeroPort) {
		r.Sample = fmt.Sprintf("%s:%d", a.IP, a.Port)
	}
}

// same24 is upstream's same_subnet_24: the address texts are both dotted
// quads whose first three parts match. It compares text, as upstream
// does, so an IPv4-mapped IPv6 candidate never matches a plain IPv4 one.
func same24(a, b string) bool {
	x, y := strings.Split(a, "."), strings.Split(b, ".")
	return len(x) == 4 && len(y) == 4 && x[0] == y[0] && x[1] == y[1] && x[2] == y[2]
}

// admitRemote vets one peer-supplied candidate (upstream's admit_remote):
// it must parse (IPv4-mapped canonicalised to IPv4), name a nonzero port
// and a punchable address; a private one (RFC 1918, ULA) must also share
// a /24 with lanRefs unless it is the peer's reflexive address (a STUN
// server inside the private network reports a private one).
func admitRemote(a TraversalAddress, lanRefs []TraversalAddress, privateGate bool) (netip.Addr, string) {
	ip, err := netip.ParseAddr(a.IP)
	if err != nil {
		return netip.Addr{}, refuseUnparsable
	}
	ip = ip.Unmap()
	if a.Port == 0 {
		return netip.Addr{}, refuseZeroPort
	}
	if NeverPunchable(ip) {
		return netip.Addr{}, refuseUnroutable
	}
	if privateGate && ip.IsPrivate() && !slices.ContainsFunc(lanRefs, func(r TraversalAddress) bool { return same24(r.IP, a.IP) }) {
		return netip.Addr{}, refuseOffSubnet
	}
	return ip, ""
}

// plannedTarget is one (our candidate, their candidate) pairing; two are
// the same when every field is.
type plannedTarget struct {
	strategy       byte // 'r' reflexive, 'l' LAN, 'm' mixed
	ourReflexive   bool
	ourCand        TraversalAddress
	theirCand      TraversalAddress
	theirReflexive bool
	remote         netip.AddrPort
}

// PlanTargets is upstream's planned_remote_endpoints: each side pairs its
// own candidates (ourLocal, ourReflexive) with the peer's, in this order,
// exact duplicate pairings removed:
//  1. our reflexive address with theirs;
//  2. each of our local candidates with each of theirs in the same /24;
//  3. each of our local candidates with their reflexive address;
//  4. our reflexive address with each of their local candidates.
//
// The pairings are capped at MaxPunchTargets, then their remote addresses
// are returned in plan order without duplicates. A peer's private local
// candidate is admitted only on a /24 of one of our local candidates, or
// of our reflexive address when that is private (STUN on the LAN).
func PlanTargets(ourLocal []TraversalAddress, ourReflexive *TraversalAddress, theirLocal []TraversalAddress, theirReflexive *TraversalAddress) ([]netip.AddrPort, Refusal) {
	tally := Refusal{Offered: len(theirLocal)}
	lanRefs := slices.Clone(ourLocal)
	if ourReflexive != nil {
		if ip, err := netip.ParseAddr(ourReflexive.IP); err == nil && ip.IsPrivate() {
			lanRefs = append(lanRefs, *ourReflexive)
		}
	}
	var refl *plannedTarget
	if theirReflexive != nil {
		tally.Offered++
		if ip, class := admitRemote(*theirReflexive, lanRefs, false); class != "" {
			tally.refuse(class, *theirReflexive, true)
		} else {
			refl = &plannedTarget{theirCand: *theirReflexive, theirReflexive: true, remote: netip.AddrPortFrom(ip, theirReflexive.Port)}
		}
	}
	var theirs []plannedTarget
	for _, c := range theirLocal {
		if ip, class := admitRemote(c, lanRefs, true); class != "" {
			tally.refuse(class, c, false)
		} else {
			theirs = append(theirs, plannedTarget{theirCand: c, remote: netip.AddrPortFrom(ip, c.Port)})
		}
	}
	var plan []plannedTarget
	push := func(t plannedTarget) {
		if !slices.Contains(plan, t) {
			plan = append(plan, t)
		}
	}
	pair := func(strategy byte, ours TraversalAddress, ourRefl bool, their plannedTarget) plannedTarget {
		their.strategy, their.ourCand, their.ourReflexive = strategy, ours, ourRefl
		return their
	}
	if ourReflexive != nil && refl != nil {
		push(pair('r', *ourReflexive, true, *refl))
	}
	for _, l := range ourLocal {
		for _, t := range theirs {
			if same24(l.IP, t.theirCand.IP) {
				push(pair('l', l, false, t))
			}
		}
	}
	if refl != nil {
		for _, l := range ourLocal {
			push(pair('m', l, false, *refl))
		}
	}
	if ourReflexive != nil {
		for _, t := range theirs {
			push(pair('m', *ourReflexive, true, t))
		}
	}
	if len(plan) > MaxPunchTargets {
		tally.Capped = len(plan) - MaxPunchTargets
		plan = plan[:MaxPunchTargets]
	}
	tally.Admitted = len(plan)
	var out []netip.AddrPort
	for _, t := range plan {
		if !slices.Contains(out, t.remote) {
			out = append(out, t.remote)
		}
	}
	return out, tally
}

// PunchResult is a punched path.
type PunchResult struct {
	Remote netip.AddrPort
	Probes int // probe rounds sent
	// Foreign counts packets that carried the session hash from a source
	// whose IP is none of the targets' (set on failure too): the hash is
	// in a signal the peer chose, so it proves nothing about the sender.
	Foreign int
}

// expectedSource reports whether a punch packet from src may be adopted:
// its IP must be one of the targets'. The port may differ, as a
// port-translating NAT in front of the peer rewrites it.
func expectedSource(src netip.AddrPort, targets []netip.AddrPort) bool {
	return slices.ContainsFunc(targets, func(t netip.AddrPort) bool { return t.Addr().Unmap() == src.Addr() })
}

// Punch runs one attempt on conn: after hint.StartAtMs (wall clock) it
// sends a probe to every target each round for hint.DurationMs, while it
// reads until timeout from the call. A matching probe is answered with
// one ack and the attempt succeeds with its source; a matching ack
// succeeds with its source. Only a source at the IP of one of the
// targets counts: others are ignored, unanswered, and counted in
// Foreign. conn's read deadline is cleared on return.
func Punch(ctx context.Context, conn *net.UDPConn, sessionID string, targets []netip.AddrPort, hint PunchHint, timeout time.Duration) (PunchResult, error) {
	if len(targets) == 0 {
		return PunchResult{}, ErrNoPunchTargets
	}
	hash := SessionHash(sessionID)
	deadline := time.Now().Add(timeout)
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rounds, foreign int
	wg.Add(1)
	go func() {
		defer wg.Done()
		rounds = sendProbes(sctx, conn, hash, targets, hint)
	}()
	defer func() {
		stop()
		wg.Wait()
		conn.SetReadDeadline(time.Time{})
	}()
	if err := conn.SetReadDeadline(deadline); err != nil {
		return PunchResult{}, fmt.Errorf("punch: %w", err)
	}
	// A cancelled ctx must end the read at once.
	unblock := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer unblock()
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				return PunchResult{Foreign: foreign}, ctx.Err()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return PunchResult{Foreign: foreign}, fmt.Errorf("%w after %s", ErrPunchTimeout, timeout)
			}
			return PunchResult{Foreign: foreign}, fmt.Errorf("punch: read: %w", err)
		}
		p, err := wire.ParsePunchPacket(buf[:n])
		if err != nil || [16]byte(p.SessionHash) != hash {
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if !expectedSource(from, targets) {
			foreign++
			continue
		}
		if !p.Ack {
			var ack [wire.PunchPacketSize]byte
			if _, err := (wire.PunchPacket{Ack: true, Sequence: p.Sequence, SessionHash: hash[:]}).MarshalTo(ack[:]); err == nil {
				_, _ = conn.WriteToUDPAddrPort(ack[:], from)
			}
		}
		stop()
		wg.Wait()
		return PunchResult{Remote: from, Probes: rounds, Foreign: foreign}, nil
	}
}

func sendProbes(ctx context.Context, conn *net.UDPConn, hash [16]byte, targets []netip.AddrPort, hint PunchHint) int {
	start := time.UnixMilli(int64(hint.StartAtMs))
	if d := time.Until(start); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0
		case <-t.C:
		}
	}
	interval := max(time.Duration(hint.IntervalMs)*time.Millisecond, minPunchInterval)
	end := time.Now().Add(max(time.Duration(hint.DurationMs)*time.Millisecond, time.Millisecond))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var pkt [wire.PunchPacketSize]byte
	rounds := 0
	for seq := uint32(0); time.Now().Before(end); seq++ {
		if _, err := (wire.PunchPacket{Sequence: seq, SessionHash: hash[:]}).MarshalTo(pkt[:]); err != nil {
			return rounds
		}
		for _, t := range targets {
			_, _ = conn.WriteToUDPAddrPort(pkt[:], t)
		}
		rounds++
		select {
		case <-ctx.Done():
			return rounds
		case <-tick.C:
		}
	}
	return rounds
}
