package rendezvous

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fips-go/fips/control/wire"
)

func TestPlanTargets(t *testing.T) {
	ourRefl := netip.MustParseAddrPort("203.0.113.9:5000")
	ourLocal := []netip.AddrPort{netip.MustParseAddrPort("192.168.1.10:5000")}
	local := []TraversalAddress{
		{"udp", "192.168.1.20", 6000}, // same /24: kept
		{"udp", "192.168.7.20", 6000}, // other /24: refused
		{"udp", "127.0.0.1", 6000},    // never punchable
		{"udp", "nonsense", 6000},
		{"udp", "10.0.0.1", 0},
		{"udp", "198.51.100.7", 40001}, // duplicate of the reflexive
	}
	got, tally, reflRefused := PlanTargets(&TraversalAddress{"udp", "198.51.100.7", 40001}, local, ourRefl, ourLocal)
	if len(got) != 2 || got[0].String() != "198.51.100.7:40001" || got[1].String() != "192.168.1.20:6000" {
		t.Errorf("targets %v", got)
	}
	if reflRefused || tally.OffSubnet != 1 || tally.Unroutable != 1 || tally.Unparsable != 1 || tally.ZeroPort != 1 || !tally.Suspicious(false) {
		t.Errorf("tally %+v", tally)
	}
	var many []TraversalAddress
	for i := range 12 {
		many = append(many, TraversalAddress{"udp", "192.168.1.20", uint16(7000 + i)})
	}
	got, tally, _ = PlanTargets(nil, many, netip.AddrPort{}, ourLocal)
	if len(got) != MaxPunchTargets || tally.Capped != 4 {
		t.Errorf("cap: %d targets, capped %d", len(got), tally.Capped)
	}
	_, _, refused := PlanTargets(&TraversalAddress{"udp", "127.0.0.1", 1}, nil, ourRefl, nil)
	if !refused {
		t.Error("loopback reflexive address admitted")
	}
}

// Both sides punch at once on loopback and both succeed, each with the
// other's socket as the remote.
func TestPunchBothSides(t *testing.T) {
	a, b := listen4(t), listen4(t)
	aa, ba := netip.MustParseAddrPort(a.LocalAddr().String()), netip.MustParseAddrPort(b.LocalAddr().String())
	hint := PunchHint{StartAtMs: uint64(time.Now().Add(50 * time.Millisecond).UnixMilli()), IntervalMs: 20, DurationMs: 2000}
	type res struct {
		r   PunchResult
		err error
	}
	ch := make(chan res, 2)
	for _, c := range []struct {
		conn *net.UDPConn
		to   netip.AddrPort
	}{{a, ba}, {b, aa}} {
		go func() {
			r, err := Punch(context.Background(), c.conn, "sess-1", []netip.AddrPort{c.to}, hint, 3*time.Second)
			ch <- res{r, err}
		}()
	}
	got := map[netip.AddrPort]bool{}
	for range 2 {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		got[r.r.Remote] = true
	}
	if !got[aa] || !got[ba] {
		t.Errorf("remotes %v", got)
	}
}

// Probes from another session are ignored; with no answer the attempt
// times out with ErrPunchTimeout.
func TestPunchIgnoresForeignSessionAndTimesOut(t *testing.T) {
	a, b := listen4(t), listen4(t)
	ba := netip.MustParseAddrPort(b.LocalAddr().String())
	aa := netip.MustParseAddrPort(a.LocalAddr().String())
	h := SessionHash("other-session")
	var pkt [wire.PunchPacketSize]byte
	if _, err := (wire.PunchPacket{SessionHash: h[:]}).MarshalTo(pkt[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteToUDPAddrPort(pkt[:], aa); err != nil {
		t.Fatal(err)
	}
	hint := PunchHint{StartAtMs: uint64(time.Now().UnixMilli()), IntervalMs: 50, DurationMs: 300}
	start := time.Now()
	_, err := Punch(context.Background(), a, "sess-2", []netip.AddrPort{ba}, hint, 400*time.Millisecond)
	if !errors.Is(err, ErrPunchTimeout) || time.Since(start) < 400*time.Millisecond {
		t.Errorf("err %v after %s", err, time.Since(start))
	}
	// b saw a's probes for sess-2: the sender ran.
	b.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 64)
	n, _, err := b.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := wire.ParsePunchPacket(buf[:n])
	if want := SessionHash("sess-2"); err != nil || p.Ack || [16]byte(p.SessionHash) != want {
		t.Errorf("probe %+v %v", p, err)
	}
	if _, err := Punch(context.Background(), a, "s", nil, hint, time.Second); !errors.Is(err, ErrNoPunchTargets) {
		t.Errorf("no targets: %v", err)
	}
}
