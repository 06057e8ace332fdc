package mmp_test

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/mmp"
)

// Ports of upstream's src/proto/mmp/tests/path_mtu.rs, plus the
// destination-side cadence.

func TestPathMTUFloor(t *testing.T) {
	for _, v := range []uint16{0, 1, 137, 138, 200, 255} {
		p := mmp.NewPathMTU()
		p.SeedSource(1400)
		if p.ApplyNotification(ms(1000), v) || p.Current() != 1400 {
			t.Fatalf("%d applied: current %d", v, p.Current())
		}
		if p.BelowFloor() != 1 {
			t.Fatalf("%d not counted", v)
		}
	}
	for _, v := range []uint16{mmp.MinActionablePathMTU, 576, 800} {
		p := mmp.NewPathMTU()
		p.SeedSource(1400)
		if !p.ApplyNotification(ms(1000), v) || p.Current() != v {
			t.Fatalf("%d not applied", v)
		}
	}
}

func TestPathMTURepeatedIncreaseNoOverflow(t *testing.T) {
	p := mmp.NewPathMTU()
	p.SeedSource(1000)
	for range 600 {
		p.ApplyNotification(ms(1000), 1200)
	}
	if p.Current() != 1000 {
		t.Fatalf("current %d", p.Current())
	}
}

func TestPathMTUResetSource(t *testing.T) {
	const base = 100_000
	p := mmp.NewPathMTU()
	if !p.ApplyNotification(ms(base), 800) {
		t.Fatal("decrease")
	}
	p.ApplyNotification(ms(base), 1400)
	p.ApplyNotification(ms(base+11_000), 1400)
	if p.Current() != 800 {
		t.Fatal("precondition")
	}
	p.ResetSource()
	if p.Current() != 65535 {
		t.Fatal("reset value")
	}
	if !p.ApplyNotification(ms(base+20_000), 1000) || p.Current() != 1000 {
		t.Fatal("fresh decrease")
	}
	t1 := base + 30_000
	p.ApplyNotification(ms(t1), 1400)
	p.ApplyNotification(ms(t1+11_000), 1400)
	p.ApplyNotification(ms(t1+21_000), 1400)
	if p.Current() != 1400 {
		t.Fatalf("increase after reset not accepted: %d", p.Current())
	}
}

func TestPathMTUIncreaseRule(t *testing.T) {
	p := mmp.NewPathMTU()
	p.SeedSource(1200)
	// Three of the same value but within 2 intervals (20 s): held.
	p.ApplyNotification(ms(0), 1400)
	p.ApplyNotification(ms(10_000), 1400)
	if p.ApplyNotification(ms(19_999), 1400) || p.Current() != 1200 {
		t.Fatal("accepted before 2 intervals")
	}
	// The fourth, spanning 20 s from the first: accepted.
	if !p.ApplyNotification(ms(20_000), 1400) || p.Current() != 1400 {
		t.Fatal("not accepted at 2 intervals")
	}
	// A different higher value restarts the sequence.
	q := mmp.NewPathMTU()
	q.SeedSource(1200)
	q.ApplyNotification(ms(0), 1400)
	q.ApplyNotification(ms(10_000), 1300)
	q.ApplyNotification(ms(20_000), 1300)
	if q.ApplyNotification(ms(25_000), 1300) {
		t.Fatal("mixed values accepted")
	}
	if !q.ApplyNotification(ms(30_000), 1300) || q.Current() != 1300 {
		t.Fatal("restarted sequence not accepted")
	}
	// Two notifications, however far apart, are not enough.
	r := mmp.NewPathMTU()
	r.SeedSource(1200)
	r.ApplyNotification(ms(0), 1400)
	if r.ApplyNotification(ms(100_000), 1400) {
		t.Fatal("two notifications accepted")
	}
	// Equal value: no change; decrease: immediate and resets the ladder.
	if r.ApplyNotification(ms(100_001), 1200) {
		t.Fatal("equal value changed")
	}
	if !r.ApplyNotification(ms(100_002), 1100) || r.Current() != 1100 {
		t.Fatal("decrease")
	}
	// The interval follows SRTT: max(10 s, 5·SRTT).
	s := mmp.NewPathMTU()
	s.UpdateInterval(time.Second)
	if s.NotificationInterval() != 10*time.Second {
		t.Fatal("floor")
	}
	s.UpdateInterval(3 * time.Second)
	if s.NotificationInterval() != 15*time.Second {
		t.Fatal("5·SRTT")
	}
	s.SeedSource(1200)
	s.ApplyNotification(ms(0), 1400)
	s.ApplyNotification(ms(1), 1400)
	if s.ApplyNotification(ms(29_999), 1400) || !s.ApplyNotification(ms(30_000), 1400) {
		t.Fatal("increase span follows the interval")
	}
}

func TestPathMTUNotificationCadence(t *testing.T) {
	p := mmp.NewPathMTU()
	if p.NotificationDue(ms(0)) {
		t.Fatal("due with nothing observed")
	}
	if _, ok := p.BuildNotification(ms(0)); ok {
		t.Fatal("built with nothing observed")
	}
	p.Observe(1400)
	if !p.NotificationDue(ms(0)) {
		t.Fatal("first observation not due at once")
	}
	if v, ok := p.BuildNotification(ms(0)); !ok || v != 1400 {
		t.Fatal("build")
	}
	if p.NotificationDue(ms(9_999)) || !p.NotificationDue(ms(10_000)) {
		t.Fatal("periodic 10 s")
	}
	// A lower observation is due at once (compared with our own current
	// source value, which is unknown = 65535 here).
	p.Observe(1300)
	if !p.NotificationDue(ms(1)) {
		t.Fatal("decrease not immediate")
	}
	p.BuildNotification(ms(1))
	// Upstream compares the observation with this session's source-side
	// value, not with the last notification: unseeded (65535), any change
	// counts as a decrease and is due at once.
	p.Observe(1500)
	if !p.NotificationDue(ms(2)) {
		t.Fatal("change with an unseeded source MTU not immediate")
	}
	q := mmp.NewPathMTU()
	q.SeedSource(1400)
	q.Observe(1400)
	q.BuildNotification(ms(0))
	q.Observe(1500)
	if q.NotificationDue(ms(1)) {
		t.Fatal("increase above our source MTU due before the period")
	}
	q.Observe(1280)
	if !q.NotificationDue(ms(2)) {
		t.Fatal("decrease below our source MTU not immediate")
	}
}
