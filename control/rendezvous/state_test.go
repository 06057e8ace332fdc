package rendezvous

import "testing"

func TestReplayCache(t *testing.T) {
	r := NewReplayCache(2, 300_000)
	if !r.Check("s1", 1000) || r.Check("s1", 2000) {
		t.Fatal("duplicate session id accepted")
	}
	if !r.Check("s1", 301_001) {
		t.Error("id still refused after the window")
	}
	r.Check("s2", 301_002)
	r.Check("s3", 301_003)
	if r.Len() != 2 || r.Evicted != 1 || r.Replays != 1 {
		t.Errorf("len %d evicted %d replays %d", r.Len(), r.Evicted, r.Replays)
	}
}

func TestAdmission(t *testing.T) {
	a := NewAdmission(3, 2)
	for i := range 2 {
		if g := a.TryAcquire("x"); g != Admitted {
			t.Fatalf("offer %d refused: %d", i, g)
		}
	}
	if a.TryAcquire("x") != PerNpubFull {
		t.Error("third from one npub admitted")
	}
	if a.TryAcquire("y") != Admitted || a.TryAcquire("z") != GlobalFull {
		t.Error("global bound not applied")
	}
	a.Release("x")
	if a.TryAcquire("z") != Admitted || a.InUse() != 3 {
		t.Error("released permit not reusable")
	}
	if a.RefusedNpub != 1 || a.RefusedGlobal != 1 {
		t.Errorf("refused counts %d %d", a.RefusedNpub, a.RefusedGlobal)
	}
}

func TestFailureStreakCooldown(t *testing.T) {
	f := NewFailureState(FailurePolicy{StreakThreshold: 3, CooldownMs: 1_800_000, WarnIntervalMs: 300_000, MaxEntries: 2, MismatchCooldownMs: 86_400_000})
	d1 := f.RecordFailure("a", 1000)
	d2 := f.RecordFailure("a", 2000)
	if !d1.ShouldWarn || d2.ShouldWarn || d2.CooldownUntilMs != 0 {
		t.Errorf("warn throttle: %+v %+v", d1, d2)
	}
	d3 := f.RecordFailure("a", 3000)
	if !d3.CrossedThreshold || d3.CooldownUntilMs != 1_803_000 {
		t.Errorf("threshold: %+v", d3)
	}
	if d4 := f.RecordFailure("a", 4000); d4.CrossedThreshold || d4.CooldownUntilMs != 1_804_000 {
		t.Errorf("past threshold: %+v", d4)
	}
	if _, cool := f.InCooldown("a", 1_000_000); !cool {
		t.Error("not in cooldown")
	}
	f.RecordSuccess("a")
	if _, cool := f.InCooldown("a", 1_000_000); cool {
		t.Error("success did not clear the cooldown")
	}
	f.RecordFailure("b", 5000)
	f.RecordFailure("c", 6000) // evicts a (oldest last failure)
	if _, ok := f.Get("a", 0); ok || f.Evicted != 1 {
		t.Errorf("eviction: evicted %d", f.Evicted)
	}
	if !f.RecordProtocolMismatch("b", 7000) {
		t.Error("first mismatch should warn")
	}
	if until, _ := f.InCooldown("b", 8000); until != 86_407_000 {
		t.Errorf("mismatch cooldown until %d", until)
	}
	if f.RecordProtocolMismatch("b", 8000) {
		t.Error("repeated mismatch warns again")
	}
}

func TestInitiatorsAndElection(t *testing.T) {
	var in Initiators
	if !in.Begin("a") || in.Begin("a") || !in.Active("a") {
		t.Fatal("dedup")
	}
	in.End("a")
	if in.Active("a") || !in.Begin("a") {
		t.Error("End did not release")
	}
	small, big := [16]byte{1}, [16]byte{2}
	if !ElectionSkipsAnswer(true, small, big) {
		t.Error("smaller initiator answered the larger's offer")
	}
	if ElectionSkipsAnswer(true, big, small) || ElectionSkipsAnswer(false, small, big) {
		t.Error("larger side, or a side not initiating, must answer")
	}
}
