package mmp

import (
	"testing"
	"time"
)

// TestPathMTUNotified: Notified is the last notification applied at or
// above the floor, whatever the source-side seed; ResetSource forgets it.
func TestPathMTUNotified(t *testing.T) {
	p := NewPathMTU()
	if _, ok := p.Notified(); ok {
		t.Fatal("notified before any notification")
	}
	now := time.Unix(0, 0)
	p.SeedSource(700)
	p.ApplyNotification(now, 1000)
	p.ApplyNotification(now, MinActionablePathMTU-1)
	if n, ok := p.Notified(); !ok || n != 1000 {
		t.Fatalf("notified %d %v, want 1000", n, ok)
	}
	p.ResetSource()
	if _, ok := p.Notified(); ok {
		t.Fatal("ResetSource kept the notified MTU")
	}
}
