package bloom

import (
	"errors"
	"testing"
)

// FuzzHandleFilterAnnounce feeds arbitrary bytes from a known peer that
// already holds a filter at sequence 5. Nothing may panic, a rejection is
// always a typed *RejectError counted once, and an acceptance stores
// exactly what was announced.
//
// Inputs are 1 KiB messages, so minimising a new input can take the
// default minimise budget (60 s); run it with a short one, e.g.
//
//	go test -run '^$' -fuzz FuzzHandleFilterAnnounce -fuzztime 30s -fuzzminimizetime 1s ./control/bloom
func FuzzHandleFilterAnnounce(f *testing.F) {
	f.Add(announce(f, 6, filterOf(addr(1), addr(2))))
	f.Add(announce(f, 5, filterOf(addr(1))))
	f.Add(announceK(f, 9, 5, allOnes()))
	f.Add(announceK(f, 9, 1, make([]byte, FilterBytes)))
	f.Add(announce(f, 1<<63, NewFilter())[:500])
	f.Add([]byte{0x20})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		tree, other := addr(1), addr(2)
		env := newFakeEnv(tree, other)
		s := newState(env)
		s.PeerUp(t0, tree)
		s.PeerUp(t0, other)
		prev := filterOf(addr(9))
		if err := s.HandleFilterAnnounce(t0, tree, announce(t, 5, prev)); err != nil {
			t.Fatal(err)
		}
		before := s.Stats()
		err := s.HandleFilterAnnounce(t0, tree, msg)
		st := s.Stats()
		info, _ := s.Peer(tree)
		got, _ := s.InboundFilter(tree)
		if err != nil {
			var re *RejectError
			if !errors.As(err, &re) || re.Reason < ReasonDecode || re.Reason > ReasonFillExceeded || !errors.Is(err, re.Reason.Err()) {
				t.Fatalf("untyped rejection %v", err)
			}
			if st.Accepted != before.Accepted || info.FilterSequence != 5 || !got.Equal(&prev) {
				t.Fatal("rejection changed the stored filter")
			}
			rejects := st.DecodeError + st.Invalid + st.NonV1 + st.UnknownPeer + st.Stale + st.FillExceeded
			if rejects != 1 || st.Received != 2 {
				t.Fatalf("stats %+v", st)
			}
			_ = err.Error()
		} else {
			if st.Accepted != 2 || info.FilterSequence <= 5 || got.FPR() > DefaultConfig().MaxInboundFPR {
				t.Fatalf("accepted: stats %+v info %+v", st, info)
			}
			if len(msg) < 11 || info.FilterSequence != uint64(msg[1])|uint64(msg[2])<<8|uint64(msg[3])<<16|uint64(msg[4])<<24|
				uint64(msg[5])<<32|uint64(msg[6])<<40|uint64(msg[7])<<48|uint64(msg[8])<<56 {
				t.Fatal("stored sequence differs from the announced one")
			}
			if string(got.Bytes()) != string(msg[11:]) || got.HashCount() != msg[9] {
				t.Fatal("stored filter differs from the announced one")
			}
		}
		s.Tick(t0)
		for _, m := range env.take() {
			want := s.OutgoingFilter(m.to)
			if !m.f.Equal(&want) {
				t.Fatal("sent filter differs from the per-peer computation")
			}
		}
		_, _ = s.MeshSizeEstimate()
		_ = s.Snapshot(tree, false)
	})
}
