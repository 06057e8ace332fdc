package mmp_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/wire"
)

// A two-node simulation on a 1 ms simulated clock: each side sends a data
// frame every ms and the reports its Link asks for (checked every tick);
// each direction drops frames at random and delivers the rest after a
// one-way delay of RTT/2 plus optional uniform jitter. Reports travel as
// encoded wire messages and count as frames, as upstream's link layer does.

type frameKind uint8

const (
	kData frameKind = iota
	kSR
	kRR
)

type frame struct {
	kind    frameKind
	counter uint64
	ts      uint32
	size    int
	body    []byte
}

type dir struct {
	loss   float64
	delay  int // one-way, ms
	jitter int // ± uniform, ms
	ring   [][]frame
}

type side struct {
	link     *mmp.Link
	counter  uint64
	firstRTT int
	losses   []float64 // Loss() after each accepted RR
	etxs     []float64
}

type sim struct {
	t0   time.Time
	now  int
	rng  *rand.Rand
	a, b *side
	ab   *dir // a → b
	ba   *dir // b → a
	tick int  // report check cadence, ms
}

func newSim(seed uint64, cfg mmp.Config, session bool, ab, ba dir) *sim {
	t0 := time.Unix(1_700_000_000, 0)
	s := &sim{t0: t0, rng: rand.New(rand.NewPCG(seed, 1)), tick: 10}
	s.a = &side{link: mmp.NewLink(t0, cfg, session)}
	s.b = &side{link: mmp.NewLink(t0, cfg, session)}
	s.a.link.SetInitiator(true)
	s.ab, s.ba = &ab, &ba
	s.ab.ring = make([][]frame, 8192)
	s.ba.ring = make([][]frame, 8192)
	return s
}

func (s *sim) at() time.Time { return s.t0.Add(time.Duration(s.now) * time.Millisecond) }

func (s *sim) send(from *side, d *dir, kind frameKind, body []byte, size int) {
	now := s.at()
	from.counter++
	ts := from.link.Timestamp(now)
	from.link.RecordSent(now, from.counter, ts, size)
	if s.rng.Float64() < d.loss {
		return
	}
	delay := d.delay
	if d.jitter > 0 {
		delay += s.rng.IntN(2*d.jitter+1) - d.jitter
	}
	slot := (s.now + max(delay, 0)) % len(d.ring)
	d.ring[slot] = append(d.ring[slot], frame{kind, from.counter, ts, size, body})
}

func (s *sim) deliver(to *side, d *dir, t *testing.T) {
	now := s.at()
	slot := s.now % len(d.ring)
	fs := d.ring[slot]
	d.ring[slot] = nil
	for _, f := range fs {
		to.link.RecordRecv(now, f.counter, f.ts, f.size, false)
		switch f.kind {
		case kSR:
			sr, err := wire.ParseSenderReport(f.body)
			if err != nil {
				t.Fatal(err)
			}
			to.link.HandleSenderReport(now, sr)
		case kRR:
			rr, err := wire.ParseReceiverReport(f.body)
			if err != nil {
				t.Fatal(err)
			}
			before := to.link.Stats().StaleReports
			if to.link.HandleReceiverReport(now, rr) {
				to.firstRTT++
			}
			if to.link.Stats().StaleReports == before {
				to.losses = append(to.losses, to.link.Loss())
				to.etxs = append(to.etxs, to.link.ETX())
			}
		}
	}
}

func (s *sim) reports(from *side, d *dir) {
	now := s.at()
	sr, rr := from.link.Due(now)
	if sr {
		if r, ok := from.link.BuildSenderReport(now); ok {
			b := make([]byte, r.Len())
			r.MarshalTo(b)
			s.send(from, d, kSR, b, len(b)+37)
		}
	}
	if rr {
		if r, ok := from.link.BuildReceiverReport(now); ok {
			b := make([]byte, r.Len())
			r.MarshalTo(b)
			s.send(from, d, kRR, b, len(b)+37)
		}
	}
}

func (s *sim) run(t *testing.T, ms int) {
	for ; s.now < ms; s.now++ {
		s.deliver(s.b, s.ab, t)
		s.deliver(s.a, s.ba, t)
		s.send(s.a, s.ab, kData, nil, 1000)
		s.send(s.b, s.ba, kData, nil, 1000)
		if s.now%s.tick == 0 {
			s.reports(s.a, s.ab)
			s.reports(s.b, s.ba)
		}
	}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func within(got, want float64) bool {
	if want < 0.1 {
		return math.Abs(got-want) <= 0.01
	}
	return math.Abs(got-want) <= 0.1*want
}

func TestSimulatedRTTAndLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		rtt  int
		loss float64
	}{
		{"rtt20_loss0", 20, 0},
		{"rtt100_loss5", 100, 0.05},
		{"rtt50_loss20", 50, 0.20},
		{"rtt400_loss1", 400, 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(7, mmp.DefaultConfig(), false,
				dir{loss: tc.loss, delay: tc.rtt / 2}, dir{loss: tc.loss, delay: tc.rtt / 2})
			s.run(t, 30_000)
			for name, sd := range map[string]*side{"a": s.a, "b": s.b} {
				srtt, ok := sd.link.SRTT()
				if !ok {
					t.Fatalf("%s: no SRTT", name)
				}
				want := time.Duration(tc.rtt) * time.Millisecond
				if math.Abs(float64(srtt-want)) > 0.1*float64(want) {
					t.Errorf("%s: SRTT %v, configured %v", name, srtt, want)
				}
				// The instantaneous loss is one report interval's worth
				// (~1000 frames); average the post-warmup samples.
				n := len(sd.losses)
				loss := mean(sd.losses[n/3:])
				if !within(loss, tc.loss) {
					t.Errorf("%s: loss %.4f, configured %.4f", name, loss, tc.loss)
				}
				sl, _ := sd.link.SmoothedLoss()
				wantETX := 1 / ((1 - tc.loss) * (1 - tc.loss))
				etx := mean(sd.etxs[n/3:])
				if math.Abs(etx-wantETX) > 0.1*wantETX {
					t.Errorf("%s: ETX %.3f, expected %.3f", name, etx, wantETX)
				}
				if sd.firstRTT != 1 {
					t.Errorf("%s: first RTT signalled %d times", name, sd.firstRTT)
				}
				st := sd.link.Stats()
				t.Logf("%s: srtt %v (configured %v) loss mean %.4f last %.4f smoothed %.4f (configured %.2f) etx %.3f (expected %.3f) goodput %.0f B/s reports %d stale %d SR %d",
					name, srtt, want, loss, sd.link.Loss(), sl, tc.loss, etx, wantETX, sd.link.Goodput(), st.ReportsSeen, st.StaleReports, st.SenderReportsRecv)
			}
			// With loss 0 every frame arrives: exact.
			if tc.loss == 0 && (s.a.link.Loss() != 0 || s.a.link.ETX() != 1) {
				t.Errorf("lossless: loss %v etx %v", s.a.link.Loss(), s.a.link.ETX())
			}
			// Goodput: one 1000-byte frame per ms plus reports, less loss.
			gp := s.a.link.Goodput()
			if wantGP := 1e6 * (1 - tc.loss); math.Abs(gp-wantGP) > 0.1*wantGP {
				t.Errorf("goodput %.0f, expected ~%.0f", gp, wantGP)
			}
		})
	}
}

func TestSimulatedAsymmetricETX(t *testing.T) {
	// a → b loses 10%, b → a loses 30%: both ends see ETX = 1/(0.9·0.7).
	s := newSim(11, mmp.DefaultConfig(), false, dir{loss: 0.10, delay: 15}, dir{loss: 0.30, delay: 15})
	s.run(t, 30_000)
	want := 1 / (0.9 * 0.7)
	for name, sd := range map[string]*side{"a": s.a, "b": s.b} {
		n := len(sd.etxs)
		if etx := mean(sd.etxs[n/3:]); math.Abs(etx-want) > 0.1*want {
			t.Errorf("%s: ETX %.3f, expected %.3f", name, etx, want)
		}
	}
	fa, ra := s.a.link.DeliveryRatios()
	fb, rb := s.b.link.DeliveryRatios()
	if math.Abs(fa-0.9) > 0.03 || math.Abs(ra-0.7) > 0.03 || math.Abs(fb-0.7) > 0.03 || math.Abs(rb-0.9) > 0.03 {
		t.Errorf("delivery a %.3f/%.3f b %.3f/%.3f", fa, ra, fb, rb)
	}
	if !s.b.link.Congested(mmp.DefaultECNLossThreshold, mmp.DefaultECNETXThreshold) {
		t.Error("30% loss link not congested")
	}
	t.Logf("a: fwd %.3f rev %.3f etx %.3f; b: fwd %.3f rev %.3f etx %.3f (expected etx %.3f)",
		fa, ra, s.a.link.ETX(), fb, rb, s.b.link.ETX(), want)
}

func TestSimulatedJitterAndReordering(t *testing.T) {
	// One-way delay 25 ± 10 ms uniform, frames 1 ms apart: they reorder,
	// and RFC 3550 jitter converges on E|d1 − d2|.
	s := newSim(3, mmp.DefaultConfig(), false, dir{delay: 25, jitter: 10}, dir{delay: 25, jitter: 10})
	s.run(t, 10_000)
	j := s.b.link.Jitter()
	// For D uniform on {−10..10} ms, E|D1−D2| = Σ|i−j|/21² = 7.33 ms.
	want := 7.33 * float64(time.Millisecond)
	if math.Abs(float64(j)-want) > 0.2*want {
		t.Errorf("jitter %v, expected ~%.2fms", j, want/1e6)
	}
	// Reordering: b's next report on a's frames carries its reorder count.
	s.run(t, 10_050)
	r, ok := s.b.link.BuildReceiverReport(s.at())
	if !ok || r.CumulativeReorderCount == 0 {
		t.Errorf("reorder count %d (ok %v)", r.CumulativeReorderCount, ok)
	}
	if _, ok := s.b.link.BuildReceiverReport(s.at()); ok {
		t.Error("second report with no data in the interval")
	}
	srtt, _ := s.a.link.SRTT()
	t.Logf("jitter %v (expected ~7.33ms), reorders %d, burst count %d, srtt %v", j, r.CumulativeReorderCount, r.BurstLossCount, srtt)
}

func TestSimulatedModes(t *testing.T) {
	for _, m := range []mmp.Mode{mmp.Lightweight, mmp.Minimal} {
		cfg := mmp.DefaultConfig()
		cfg.Mode = m
		s := newSim(5, cfg, false, dir{delay: 10}, dir{delay: 10})
		s.run(t, 5_000)
		for name, sd := range map[string]*side{"a": s.a, "b": s.b} {
			st := sd.link.Stats()
			if st.SenderReportsRecv != 0 {
				t.Errorf("%v %s: %d SRs received", m, name, st.SenderReportsRecv)
			}
			if m == mmp.Minimal && st.ReportsSeen != 0 {
				t.Errorf("minimal %s: %d RRs received", name, st.ReportsSeen)
			}
			if m == mmp.Lightweight && st.ReportsSeen == 0 {
				t.Errorf("lightweight %s: no RRs", name)
			}
			if _, ok := sd.link.BuildSenderReport(s.at()); ok {
				t.Errorf("%v: SR built", m)
			}
			if sr, rr := sd.link.Due(s.at().Add(time.Minute)); sr || (m == mmp.Minimal && rr) {
				t.Errorf("%v: due sr=%v rr=%v", m, sr, rr)
			}
		}
		if _, ok := s.a.link.SRTT(); ok == (m == mmp.Minimal) {
			t.Errorf("%v: SRTT measured=%v", m, ok)
		}
	}
}

func TestSimulatedSession(t *testing.T) {
	s := newSim(9, mmp.DefaultSessionConfig(), true, dir{loss: 0.02, delay: 40}, dir{loss: 0.02, delay: 40})
	s.run(t, 30_000)
	srtt, ok := s.a.link.SRTT()
	if !ok || math.Abs(float64(srtt-80*time.Millisecond)) > 8e6 {
		t.Fatalf("session srtt %v", srtt)
	}
	sr, rr := s.a.link.ReportIntervals()
	if sr != 500*time.Millisecond || rr != 500*time.Millisecond {
		t.Errorf("session intervals %v %v, want 500ms (floor)", sr, rr)
	}
	if s.a.link.PathMTU() == nil || s.a.link.PathMTU().NotificationInterval() != 10*time.Second {
		t.Error("session path MTU interval")
	}
	snap := s.a.link.Snapshot()
	if snap.PathMTU == nil || *snap.PathMTU != 65535 || snap.SRTTMs == nil || snap.Quality == nil || snap.SpinBitRole != "initiator" {
		t.Errorf("snapshot %+v", snap)
	}
}
