package rendezvous

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/netip"
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

// Refusal tallies why candidate addresses were not planned.
type Refusal struct {
	Offered, Admitted, Unparsable, ZeroPort, Unroutable, OffSubnet, Capped int
}

// Suspicious is upstream's WARN condition for a plan's refusals.
func (r Refusal) Suspicious(reflexiveRefused bool) bool {
	return r.Unparsable > 0 || r.ZeroPort > 0 || r.Unroutable > 0 || r.Capped > 0 ||
		(r.Offered > 0 && r.Admitted == 0) || reflexiveRefused
}

func parseCandidate(a TraversalAddress) (netip.AddrPort, error) {
	ip, err := netip.ParseAddr(a.IP)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ip.Unmap(), a.Port), nil
}

func same24(a, b netip.Addr) bool {
	if !a.Is4() || !b.Is4() {
		return false
	}
	x, y := a.As4(), b.As4()
	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2]
}

// PlanTargets orders the peer's candidates as upstream's
// plan_punch_targets: reflexive, then local addresses in a /24 we share,
// capped at MaxPunchTargets, duplicates removed. ourLocal and ourReflexive
// are our own candidates; a peer's private local address is admitted only
// on one of our /24s.
func PlanTargets(theirReflexive *TraversalAddress, theirLocal []TraversalAddress, ourReflexive netip.AddrPort, ourLocal []netip.AddrPort) ([]netip.AddrPort, Refusal, bool) {
	var tally Refusal
	lanRefs := make([]netip.Addr, 0, len(ourLocal)+1)
	for _, l := range ourLocal {
		lanRefs = append(lanRefs, l.Addr())
	}
	if ourReflexive.IsValid() && ourReflexive.Addr().IsPrivate() {
		lanRefs = append(lanRefs, ourReflexive.Addr())
	}
	admit := func(a TraversalAddress, local bool) (netip.AddrPort, bool) {
		tally.Offered++
		ap, err := parseCandidate(a)
		switch {
		case err != nil:
			tally.Unparsable++
		case ap.Port() == 0:
			tally.ZeroPort++
		case NeverPunchable(ap.Addr()):
			tally.Unroutable++
		case local && ap.Addr().IsPrivate() && !onSubnet(ap.Addr(), lanRefs):
			tally.OffSubnet++
		default:
			tally.Admitted++
			return ap, true
		}
		return netip.AddrPort{}, false
	}
	var out []netip.AddrPort
	seen := map[netip.AddrPort]bool{}
	add := func(ap netip.AddrPort) {
		if seen[ap] {
			return
		}
		if len(out) >= MaxPunchTargets {
			tally.Capped++
			return
		}
		seen[ap] = true
		out = append(out, ap)
	}
	reflexiveRefused := false
	if theirReflexive != nil {
		if ap, ok := admit(*theirReflexive, false); ok {
			add(ap)
		} else {
			reflexiveRefused = true
		}
	}
	for _, l := range theirLocal {
		if ap, ok := admit(l, true); ok {
			add(ap)
		}
	}
	return out, tally, reflexiveRefused
}

func onSubnet(ip netip.Addr, refs []netip.Addr) bool {
	for _, r := range refs {
		if same24(ip, r) {
			return true
		}
	}
	return false
}

// PunchResult is a punched path.
type PunchResult struct {
	Remote netip.AddrPort
	Probes int // probe rounds sent
}

// Punch runs one attempt on conn: after hint.StartAtMs (wall clock) it
// sends a probe to every target each round for hint.DurationMs, while it
// reads until timeout from the call. A matching probe is answered with
// one ack and the attempt succeeds with its source; a matching ack
// succeeds with its source. conn's read deadline is cleared on return.
func Punch(ctx context.Context, conn *net.UDPConn, sessionID string, targets []netip.AddrPort, hint PunchHint, timeout time.Duration) (PunchResult, error) {
	if len(targets) == 0 {
		return PunchResult{}, ErrNoPunchTargets
	}
	hash := SessionHash(sessionID)
	deadline := time.Now().Add(timeout)
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rounds int
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
				return PunchResult{}, ctx.Err()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return PunchResult{}, fmt.Errorf("%w after %s", ErrPunchTimeout, timeout)
			}
			return PunchResult{}, fmt.Errorf("punch: read: %w", err)
		}
		p, err := wire.ParsePunchPacket(buf[:n])
		if err != nil || [16]byte(p.SessionHash) != hash {
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if !p.Ack {
			var ack [wire.PunchPacketSize]byte
			if _, err := (wire.PunchPacket{Ack: true, Sequence: p.Sequence, SessionHash: hash[:]}).MarshalTo(ack[:]); err == nil {
				_, _ = conn.WriteToUDPAddrPort(ack[:], from)
			}
		}
		stop()
		wg.Wait()
		return PunchResult{Remote: from, Probes: rounds}, nil
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
