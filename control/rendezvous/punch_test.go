package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/wire"
)

func ta(ip string, port uint16) TraversalAddress {
	return TraversalAddress{Protocol: "udp", IP: ip, Port: port}
}

func taPtr(ip string, port uint16) *TraversalAddress { a := ta(ip, port); return &a }

func aps(ss ...string) []netip.AddrPort {
	out := make([]netip.AddrPort, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddrPort(s)
	}
	return out
}

// The plan is upstream's: reflexive with reflexive, then LAN pairs in a
// shared /24, then our locals to their reflexive, then our reflexive to
// their locals; remote addresses deduplicated in that order.
func TestPlanTargetsOrder(t *testing.T) {
	ourLocal := []TraversalAddress{ta("192.168.1.10", 62000), ta("10.0.0.10", 62000)}
	got, tally := PlanTargets(ourLocal, taPtr("203.0.113.10", 62000),
		[]TraversalAddress{ta("10.0.0.20", 63000), ta("192.168.1.20", 63000), ta("198.51.100.77", 63001)},
		taPtr("198.51.100.20", 63000))
	// Pairings: R(refl,refl); L(192.168.1.10,192.168.1.20), L(10.0.0.10,10.0.0.20);
	// M(each local, their refl) x2; M(our refl, each of their 3 locals): 8 in all.
	want := aps("198.51.100.20:63000", "192.168.1.20:63000", "10.0.0.20:63000", "198.51.100.77:63001")
	if !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	if tally.Offered != 4 || tally.Admitted != 8 || tally.Capped != 0 || !tally.Quiet() || tally.Suspicious() {
		t.Errorf("tally %+v", tally)
	}

	// Without a reflexive address of our own, their reflexive address is
	// reached only from our local candidates (upstream pairs it with ours).
	got, _ = PlanTargets(nil, nil, nil, taPtr("198.51.100.20", 63000))
	if len(got) != 0 {
		t.Errorf("no candidates of ours: %v", got)
	}
	got, _ = PlanTargets([]TraversalAddress{ta("192.168.1.10", 62000)}, nil, nil, taPtr("198.51.100.20", 63000))
	if !slices.Equal(got, aps("198.51.100.20:63000")) {
		t.Errorf("local only: %v", got)
	}
	// share_local_candidates false on our side (ourLocal empty): their
	// public local candidates are reached from our reflexive address, a
	// private one is off our subnets.
	got, tally = PlanTargets([]TraversalAddress{}, taPtr("203.0.113.10", 62000),
		[]TraversalAddress{ta("192.168.1.20", 63000), ta("198.51.100.30", 63000)}, taPtr("198.51.100.20", 63000))
	if !slices.Equal(got, aps("198.51.100.20:63000", "198.51.100.30:63000")) || tally.OffSubnet != 1 || tally.Suspicious() {
		t.Errorf("no locals of ours: %v %+v", got, tally)
	}
}

func TestPlanTargetsRefusals(t *testing.T) {
	got, tally := PlanTargets([]TraversalAddress{ta("192.168.1.10", 62000)}, taPtr("203.0.113.10", 62000),
		[]TraversalAddress{ta("127.0.0.1", 63000), ta("203.0.113.5", 0), ta("10.9.9.9", 63000), ta("not-an-ip", 63000)},
		taPtr("198.51.100.20", 63000))
	if tally.Offered != 5 || tally.Unroutable != 1 || tally.ZeroPort != 1 || tally.OffSubnet != 1 || tally.Unparsable != 1 ||
		tally.Sample != "127.0.0.1:63000" || tally.Reflexive != "" || tally.Admitted == 0 || !tally.Suspicious() {
		t.Errorf("tally %+v", tally)
	}
	if !slices.Equal(got, aps("198.51.100.20:63000")) {
		t.Errorf("targets %v", got)
	}

	// Never-punchable candidates of every kind; with no locals of ours only
	// the reflexive pairing plans.
	got, _ = PlanTargets(nil, taPtr("203.0.113.10", 62000), []TraversalAddress{
		ta("127.0.0.1", 63000), ta("224.0.0.1", 63000), ta("169.254.1.1", 63000), ta("255.255.255.255", 63000),
		ta("0.0.0.0", 63000), ta("100.64.1.2", 63000), ta("8.8.8.8", 0),
		ta("::1", 63000), ta("::", 63000), ta("ff02::1", 63000), ta("fe80::1", 63000),
	}, taPtr("198.51.100.20", 63000))
	if !slices.Equal(got, aps("198.51.100.20:63000")) {
		t.Errorf("unpunchable admitted: %v", got)
	}
	// A ULA candidate never shares a "/24" (upstream compares dotted
	// quads), and an IPv4-mapped private one is compared as text too.
	_, tally = PlanTargets([]TraversalAddress{ta("fd00::2", 62000)}, taPtr("203.0.113.10", 62000),
		[]TraversalAddress{ta("fd00::1", 63000), ta("::ffff:10.0.0.1", 63000)}, taPtr("198.51.100.20", 63000))
	if tally.OffSubnet != 2 {
		t.Errorf("ULA / mapped: %+v", tally)
	}

	// A refused reflexive address is recorded apart from the candidates.
	_, tally = PlanTargets([]TraversalAddress{ta("192.168.1.10", 62000)}, taPtr("203.0.113.10", 62000),
		[]TraversalAddress{ta("192.168.1.20", 63000)}, taPtr("127.0.0.1", 63000))
	if tally.Reflexive != "never-routable" || tally.Unroutable != 0 || tally.Sample != "127.0.0.1:63000" || !tally.Suspicious() {
		t.Errorf("reflexive refusal %+v", tally)
	}
	// Everything refused is suspicious; off-subnet alone is not.
	_, tally = PlanTargets(nil, taPtr("203.0.113.10", 62000), []TraversalAddress{ta("127.0.0.1", 63000), ta("224.0.0.1", 63000)}, nil)
	if tally.Admitted != 0 || tally.Unroutable != 2 || !tally.Suspicious() {
		t.Errorf("all refused %+v", tally)
	}
	_, tally = PlanTargets([]TraversalAddress{ta("192.168.1.10", 62000)}, taPtr("203.0.113.10", 62000),
		[]TraversalAddress{ta("10.9.9.9", 63000)}, taPtr("198.51.100.20", 63000))
	// Two pairings plan (reflexive, and our local to their reflexive) for
	// two offered, so upstream logs nothing at all here.
	if tally.OffSubnet != 1 || tally.Admitted != 2 || tally.Suspicious() || !tally.Quiet() {
		t.Errorf("off-subnet only %+v", tally)
	}
	// STUN inside the private network: a private reflexive address is not
	// gated, and ours joins the LAN references.
	got, _ = PlanTargets(nil, taPtr("192.168.1.10", 62000), []TraversalAddress{ta("192.168.1.30", 63000)}, taPtr("192.168.1.20", 63000))
	if !slices.Equal(got, aps("192.168.1.20:63000", "192.168.1.30:63000")) {
		t.Errorf("LAN STUN: %v", got)
	}
}

// The cap bounds the pairings, not the remote addresses: the same remote
// reached from two of our candidates counts twice.
func TestPlanTargetsCap(t *testing.T) {
	var remotes []TraversalAddress
	for h := 1; h <= 150; h++ {
		remotes = append(remotes, ta(fmt.Sprintf("203.0.113.%d", h), 63000), ta(fmt.Sprintf("198.51.100.%d", h), 63000))
	}
	got, tally := PlanTargets(nil, taPtr("203.0.113.10", 62000), remotes, taPtr("198.51.100.20", 63000))
	if len(got) != MaxPunchTargets || tally.Admitted != MaxPunchTargets || tally.Capped != 301-MaxPunchTargets || !tally.Suspicious() {
		t.Errorf("cap: %d targets, %+v", len(got), tally)
	}
	remotes = remotes[:0]
	for h := 1; h <= 150; h++ {
		remotes = append(remotes, ta(fmt.Sprintf("127.0.0.%d", h), 63000), ta(fmt.Sprintf("224.0.0.%d", h), 63000))
	}
	got, tally = PlanTargets(nil, taPtr("203.0.113.10", 62000), remotes, taPtr("198.51.100.20", 63000))
	if !slices.Equal(got, aps("198.51.100.20:63000")) || tally.Unroutable != 300 || tally.Admitted != 1 || !tally.Suspicious() {
		t.Errorf("unroutable flood: %v %+v", got, tally)
	}
	// Three locals of ours each paired with their reflexive address: three
	// pairings, one remote address.
	ours := []TraversalAddress{ta("192.168.1.10", 1), ta("192.168.2.10", 1), ta("192.168.3.10", 1)}
	got, tally = PlanTargets(ours, nil, nil, taPtr("198.51.100.20", 63000))
	if len(got) != 1 || tally.Admitted != 3 || tally.Offered != 1 || !tally.Quiet() {
		t.Errorf("pairings: %v %+v", got, tally)
	}
}

func TestHostCandidates(t *testing.T) {
	a := netip.MustParseAddr
	iface := []netip.Addr{a("fd12::1"), a("192.168.1.5"), a("203.0.113.4"), a("10.1.2.3"), a("fe80::1"), a("2001:db8::5"), a("192.168.1.5")}
	egress := []netip.Addr{a("203.0.113.4"), a("192.168.1.5"), a("2001:db8::5"), a("::"), a("0.0.0.0")}
	got := hostCandidates(iface, egress)
	// Private interface addresses, IPv4 first; then the egress addresses
	// whatever their range; no unspecified, no duplicates.
	want := []netip.Addr{a("192.168.1.5"), a("10.1.2.3"), a("fd12::1"), a("203.0.113.4"), a("2001:db8::5")}
	if !slices.Equal(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	var many []netip.Addr
	for i := range 300 {
		many = append(many, netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}))
	}
	if n := len(hostCandidates(many, nil)); n != MaxLocalCandidates {
		t.Errorf("bound: %d", n)
	}
	// On this host: every candidate has the port, none is unspecified or
	// loopback.
	for _, ap := range LocalCandidates(4242) {
		if ap.Port() != 4242 || ap.Addr().IsUnspecified() || ap.Addr().IsLoopback() {
			t.Errorf("host candidate %v", ap)
		}
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
