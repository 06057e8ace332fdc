package session

import (
	"testing"
	"time"
)

// BenchmarkTickIdle: one Tick over 1,024 established sessions with no
// timer due, the steady state every node tick pays.
func BenchmarkTickIdle(b *testing.B) {
	m := newMesh(b, 71)
	cfg := DefaultConfig()
	cfg.RekeyEnabled = false
	hub := m.addNode(cfg)
	for range 1024 {
		p := m.addNode(cfg)
		if err := p.tbl.Send(m.now, hub.addr, 1, 1, []byte("x")); err != nil {
			b.Fatal(err)
		}
		m.run()
	}
	if hub.tbl.Len() != 1024 {
		b.Fatalf("%d sessions", hub.tbl.Len())
	}
	now := m.now
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		hub.tbl.Tick(now)
	}
}
