package session

import (
	"testing"
	"time"
)

// TestSessionTableBoundFavoursProven mounts issue 27's item 2: strangers
// with fresh keys complete handshakes with a node and send one packet
// each, to fill its session table. The table holds MaxSessions; the
// flood is refused while only proven sessions and fresh inbound ones are
// held, then churns among its own idle sessions; the node's own
// sessions and the inbound ones that carried data both ways survive and
// keep delivering, and a session the node initiates always finds room.
func TestSessionTableBoundFavoursProven(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSessions = 8
	m := newMesh(t, 81)
	hub := m.addNode(cfg)
	var proven []*node
	for range 2 { // sessions the hub initiated
		p := m.addNode(DefaultConfig())
		if err := hub.tbl.Send(m.now, p.addr, 1, 1, []byte("out")); err != nil {
			t.Fatal(err)
		}
		proven = append(proven, p)
	}
	for range 2 { // inbound sessions with data both ways
		p := m.addNode(DefaultConfig())
		p.tbl.Send(m.now, hub.addr, 1, 1, []byte("in"))
		m.run()
		hub.tbl.Send(m.now, p.addr, 1, 1, []byte("reply"))
		proven = append(proven, p)
	}
	m.run()
	for _, p := range proven {
		if !hub.tbl.Established(p.addr) {
			t.Fatal("proven session not established")
		}
	}

	// The flood: 20 fresh keys, one SessionSetup and one packet each.
	flood := func(n int) {
		for range n {
			s := m.addNode(DefaultConfig())
			s.tbl.Send(m.now, hub.addr, 1, 1, []byte("flood"))
			m.run()
		}
	}
	flood(20)
	st := hub.tbl.Stats()
	if hub.tbl.Len() != 8 || st.SessionsRefused != 16 || st.SessionsEvicted != 0 {
		t.Fatalf("len %d refused %d evicted %d, want 8 16 0", hub.tbl.Len(), st.SessionsRefused, st.SessionsEvicted)
	}
	// Once the flood's own sessions have idled, new setups replace them,
	// never a proven session.
	m.advance(UnprovenIdle + time.Second)
	flood(3)
	st = hub.tbl.Stats()
	if hub.tbl.Len() != 8 || st.SessionsEvicted != 3 || st.SessionsRefused != 16 {
		t.Fatalf("len %d evicted %d refused %d, want 8 3 16", hub.tbl.Len(), st.SessionsEvicted, st.SessionsRefused)
	}
	// A session the hub initiates finds room at once.
	n := m.addNode(DefaultConfig())
	if err := hub.tbl.Send(m.now, n.addr, 1, 1, []byte("new")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if !hub.tbl.Established(n.addr) || len(n.delivered) != 1 || hub.tbl.Stats().SessionsEvicted != 4 {
		t.Fatalf("hub's own session: established %v, delivered %d, evicted %d",
			hub.tbl.Established(n.addr), len(n.delivered), hub.tbl.Stats().SessionsEvicted)
	}
	// Every proven session is still up and carries traffic both ways.
	for i, p := range proven {
		if !hub.tbl.Established(p.addr) {
			t.Fatalf("proven session %d evicted", i)
		}
		p.delivered, hub.delivered = nil, nil
		hub.tbl.Send(m.now, p.addr, 2, 2, []byte("to"))
		p.tbl.Send(m.now, hub.addr, 2, 2, []byte("from"))
		m.run()
		if len(p.delivered) != 1 || len(hub.delivered) != 1 {
			t.Fatalf("proven session %d: delivered %d / %d", i, len(p.delivered), len(hub.delivered))
		}
	}
}
