package peer

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/wire"
)

// runDelayed runs n for d in 10 ms ticks, every packet taking delay to
// arrive.
func runDelayed(n *simNet, d, delay time.Duration) {
	type held struct {
		p  simPkt
		at time.Time
	}
	var q []held
	n.intercept = func(p simPkt) bool {
		q = append(q, held{p, n.now.Add(delay)})
		return true
	}
	defer func() { n.intercept = nil }()
	for end := n.now.Add(d); n.now.Before(end); {
		n.now = n.now.Add(10 * time.Millisecond)
		for _, node := range n.nodes {
			node.m.Tick(n.now)
		}
		n.deliver()
		due := q
		q = nil
		for _, h := range due {
			if h.at.After(n.now) {
				q = append(q, h)
			} else if dst := n.nodes[h.p.to]; dst != nil {
				dst.m.HandlePacket(n.now, 1, h.p.from, h.p.data)
			}
		}
		n.deliver() // answers leave now
	}
}

// TestV1MMPReports: over a v1 link 20 ms each way, next's reports give
// a 40 ms RTT and no loss, no spin-bit role is kept, and the profiles
// gate the reports as next's do: SenderReports only to a Full peer from
// a Full or NonRouting one, ReceiverReports to a Full or NonRouting
// peer (a Leaf gets none and measures nothing).
func TestV1MMPReports(t *testing.T) {
	for _, c := range []struct {
		b        wire.NodeProfile
		srToB    bool // a sends SenderReports to b
		srToA    bool
		rttAtB   bool // b gets ReceiverReports
		reportsA bool // a sends any report
	}{
		{wire.ProfileFull, true, true, true, true},
		{wire.ProfileNonRouting, false, true, true, true},
		{wire.ProfileLeaf, false, false, false, false},
	} {
		t.Run(c.b.String(), func(t *testing.T) {
			n := newSimNet(t, 23)
			n.loss = 0
			cb := v1Config(WireV1)
			cb.Profile = c.b
			a, b := n.add(1, v1Config(WireV1)), n.add(2, cb)
			if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
				t.Fatal(err)
			}
			n.deliver()
			linked(t, a, b)
			runDelayed(n, 30*time.Second, 20*time.Millisecond)
			linked(t, a, b)
			ma, mb := a.m.Peer(b.id.NodeAddr()).MMP(), b.m.Peer(a.id.NodeAddr()).MMP()
			if s, ok := ma.SRTT(); !ok || s != 40*time.Millisecond {
				t.Errorf("a: srtt %v %v, want 40 ms", s, ok)
			}
			if ma.Loss() != 0 || ma.ETX() != 1 {
				t.Errorf("a: loss %v, etx %v", ma.Loss(), ma.ETX())
			}
			s, ok := mb.SRTT()
			if c.rttAtB && (!ok || s != 40*time.Millisecond) {
				t.Errorf("b: srtt %v %v, want 40 ms", s, ok)
			}
			if !c.rttAtB && (ok || mb.Stats().ReportsSeen != 0) {
				t.Errorf("b got %d ReceiverReports", mb.Stats().ReportsSeen)
			}
			if got := mb.Stats().SenderReportsRecv > 0; got != c.srToB {
				t.Errorf("b got %d SenderReports", mb.Stats().SenderReportsRecv)
			}
			if got := ma.Stats().SenderReportsRecv > 0; got != c.srToA {
				t.Errorf("a got %d SenderReports", ma.Stats().SenderReportsRecv)
			}
			if got := a.m.Stats().ReportsSent > 0; got != c.reportsA {
				t.Errorf("a sent %d reports", a.m.Stats().ReportsSent)
			}
			if ma.Snapshot().SpinBitRole != "" || mb.Snapshot().SpinBitRole != "" {
				t.Errorf("spin-bit roles on a v1 link: %q %q", ma.Snapshot().SpinBitRole, mb.Snapshot().SpinBitRole)
			}
			if a.m.Stats().DropMalformed != 0 || b.m.Stats().DropMalformed != 0 {
				t.Errorf("malformed drops %d %d", a.m.Stats().DropMalformed, b.m.Stats().DropMalformed)
			}
		})
	}
}
