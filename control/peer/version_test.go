package peer

import (
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// TestOtherVersionDroppedAndCounted: a neighbour running upstream's next
// sends a version-1 (Noise XX) msg1. It is dropped before dispatch with
// nothing sent back, counted in drop_other_version (and drop_malformed,
// as before), and logged at INFO at most once a minute.
func TestOtherVersionDroppedAndCounted(t *testing.T) {
	n := newSimNet(t, 7)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	hs, err := noise.NewXXInitiator(a.id.Secret().Private(), noise.Epoch{1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := hs.WriteMessage1(nil)
	if err != nil {
		t.Fatal(err)
	}
	m1 := make([]byte, wire.FMPv1Msg1Size)
	if _, err := (wire.FMPv1Handshake{Phase: wire.FMPPhaseMsg1, SenderIndex: 9, Noise: e}).MarshalTo(m1); err != nil {
		t.Fatal(err)
	}
	before := b.m.Stats()
	for range 3 {
		b.m.HandlePacket(n.now, 1, a.addr, m1)
	}
	n.now = n.now.Add(61 * time.Second)
	b.m.HandlePacket(n.now, 1, a.addr, m1)
	s := b.m.Stats()
	if got := s.DropOtherVersion - before.DropOtherVersion; got != 4 {
		t.Errorf("drop_other_version moved by %d, want 4", got)
	}
	if got := s.DropMalformed - before.DropMalformed; got != 4 {
		t.Errorf("drop_malformed moved by %d, want 4", got)
	}
	if len(n.queue) != 0 {
		t.Errorf("b answered a version-1 msg1: %d packets queued", len(n.queue))
	}
	logs := b.logs.String()
	if c := strings.Count(logs, "Packet of another FMP version dropped"); c != 2 {
		t.Errorf("%d INFO lines for 4 packets over 61 s, want 2:\n%s", c, logs)
	}
	if !strings.Contains(logs, "version=1") || !strings.Contains(logs, "our_version=0") {
		t.Errorf("the line does not name both versions:\n%s", logs)
	}
}
