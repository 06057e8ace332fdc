package peer

import (
	"bytes"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// TestOuterCEIsFMPCE: a frame sent without the FMP CE flag but received
// with outer CE authenticates (the header, the AEAD's associated data,
// is left as sent) and reaches the upper layer and link MMP as CE; the
// same frames without outer CE do not.
func TestOuterCEIsFMPCE(t *testing.T) {
	n := newSimNet(t, 1)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, a, b)
	pa := a.m.Peer(b.id.NodeAddr())
	pb := b.m.Peer(a.id.NodeAddr())
	b.msgs = nil
	for i := range 6 {
		if err := a.m.SendLink(n.now, pa, 0, lookupMsg(i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(n.queue) != 6 {
		t.Fatalf("%d packets queued, want 6", len(n.queue))
	}
	for i, p := range n.queue {
		if p.data[1]&wire.FMPFlagCE != 0 {
			t.Fatal("frame sent with CE")
		}
		hdr := bytes.Clone(p.data[:wire.FMPHeaderSize])
		b.m.HandlePacketECN(n.now, 1, p.from, p.data, i%2 == 1)
		if !bytes.Equal(p.data[:wire.FMPHeaderSize], hdr) {
			t.Errorf("frame %d: header changed", i)
		}
	}
	n.queue = nil
	if len(b.msgs) != 6 {
		t.Fatalf("b got %d messages, want 6", len(b.msgs))
	}
	for i, m := range b.msgs {
		if got, want := m.flags&wire.FMPFlagCE != 0, i%2 == 1; got != want || !bytes.Equal(m.msg, lookupMsg(i)) {
			t.Errorf("message %d: CE %v, want %v", i, got, want)
		}
	}
	// The receiver report b's link MMP builds counts the three (the
	// harness's PeerUp frames carried none).
	rr, ok := pb.mmp.BuildReceiverReport(n.now)
	if !ok || rr.ECNCECount != 3 {
		t.Errorf("receiver report: ok %v, ecn_ce_count %d, want 3", ok, rr.ECNCECount)
	}
}
