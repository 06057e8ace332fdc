package noise

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"testing"
)

func testSessions(t testing.TB) (si, sr *Session) {
	t.Helper()
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	si, sr, err := runIK(a, b, b.PubKey(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return si, sr
}

// fmpHeader writes an established-frame header for counter into h[:16].
func fmpHeader(h []byte, plen int, ctr uint64) {
	h[0], h[1] = 0, 0
	binary.LittleEndian.PutUint16(h[2:], uint16(plen))
	binary.LittleEndian.PutUint32(h[4:], 0x01020304)
	binary.LittleEndian.PutUint64(h[8:], ctr)
}

func TestTransportZeroAllocs(t *testing.T) {
	si, sr := testSessions(t)
	payload := bytes.Repeat([]byte{0xab}, 1400)
	frame := make([]byte, 0, 16+len(payload)+TagSize)
	out := make([]byte, 0, len(payload))
	allocs := testing.AllocsPerRun(200, func() {
		ctr, err := si.NextSendCounter()
		if err != nil {
			panic(err)
		}
		f := frame[:16]
		fmpHeader(f, len(payload), ctr)
		f, err = si.Seal(f, ctr, f[:16], payload)
		if err != nil {
			panic(err)
		}
		pt, err := sr.Open(out[:0], binary.LittleEndian.Uint64(f[8:16]), f[:16], f[16:])
		if err != nil || len(pt) != len(payload) {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Seal+Open allocate %.1f times per packet", allocs)
	}
}

func TestSealInPlace(t *testing.T) {
	si, sr := testSessions(t)
	msg := []byte("in place please")
	buf := make([]byte, len(msg), len(msg)+TagSize)
	copy(buf, msg)
	ct, err := si.Seal(buf[:0], 0, nil, buf)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := sr.Open(ct[:0], 0, nil, ct)
	if err != nil || !bytes.Equal(pt, msg) {
		t.Fatalf("%q %v", pt, err)
	}
}

func TestOpenFailures(t *testing.T) {
	si, sr := testSessions(t)
	hdr := make([]byte, 16)
	fmpHeader(hdr, 5, 7)
	ct, _ := si.Seal(nil, 7, hdr, []byte("hello"))

	badHdr := append([]byte(nil), hdr...)
	badHdr[1] = 0x02 // CE flag flipped in transit
	for name, c := range map[string]struct {
		ctr uint64
		ad  []byte
		ct  []byte
	}{
		"wrong AAD":     {7, badHdr, ct},
		"wrong counter": {8, hdr, ct},
		"flipped tag":   {7, hdr, append(append([]byte(nil), ct[:len(ct)-1]...), ct[len(ct)-1]^1)},
	} {
		if _, err := sr.Open(nil, c.ctr, c.ad, c.ct); !errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Failed opens did not advance or mark the window.
	if sr.Replay().Highest() != 0 || !sr.Replay().Check(8) || !sr.Replay().Check(7) {
		t.Error("a forged frame changed the replay window")
	}
	if _, err := sr.Open(nil, 9, nil, make([]byte, TagSize-1)); !errors.Is(err, ErrMessageTooShort) {
		t.Error("short:", err)
	}
	if _, err := si.Seal(nil, 0, nil, make([]byte, MaxPlaintextSize+1)); !errors.Is(err, ErrMessageTooLarge) {
		t.Error("large:", err)
	}
	if _, err := si.Seal(nil, 0, nil, make([]byte, MaxPlaintextSize)); err != nil {
		t.Error("max size:", err)
	}
	if pt, err := sr.Open(nil, 7, hdr, ct); err != nil || string(pt) != "hello" {
		t.Errorf("genuine frame after forgeries: %q %v", pt, err)
	}
	if _, err := sr.Open(nil, 7, hdr, ct); !errors.Is(err, ErrReplay) {
		t.Error("replay:", err)
	}
}

func TestNonceExhaustion(t *testing.T) {
	c := NewCipherState([KeySize]byte{1})
	c.n.Store(math.MaxUint64 - 1)
	if n, err := c.Next(); err != nil || n != math.MaxUint64-1 {
		t.Fatalf("last counter: %d %v", n, err)
	}
	for range 2 {
		if _, err := c.Next(); !errors.Is(err, ErrNonceExhausted) {
			t.Fatalf("after the last counter: %v", err)
		}
	}
	if c.Nonce() != math.MaxUint64 {
		t.Fatal("counter wrapped")
	}
}

func TestNextConcurrent(t *testing.T) {
	c := NewCipherState([KeySize]byte{2})
	const workers, each = 8, 2000
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				n, err := c.Next()
				if err != nil {
					panic(err)
				}
				got[w] = append(got[w], n)
			}
		})
	}
	wg.Wait()
	seen := make(map[uint64]bool, workers*each)
	for _, g := range got {
		for _, n := range g {
			if seen[n] {
				t.Fatalf("counter %d handed out twice", n)
			}
			seen[n] = true
		}
	}
	if c.Nonce() != workers*each {
		t.Fatalf("final counter %d", c.Nonce())
	}
}

func TestConcurrentSeal(t *testing.T) {
	si, sr := testSessions(t)
	const workers, each = 4, 200
	frames := make(chan []byte, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				ctr, _ := si.NextSendCounter()
				f := make([]byte, 16, 64)
				fmpHeader(f, 8, ctr)
				f, _ = si.Seal(f, ctr, f[:16], []byte("parallel"))
				frames <- f
			}
		})
	}
	wg.Wait()
	close(frames)
	n := 0
	for f := range frames {
		if _, err := sr.Open(nil, binary.LittleEndian.Uint64(f[8:16]), f[:16], f[16:]); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != workers*each {
		t.Fatal(n)
	}
}

func benchSessions(b *testing.B) (si, sr *Session) {
	return testSessions(b)
}

func BenchmarkSeal1400(b *testing.B) {
	si, _ := benchSessions(b)
	payload := make([]byte, 1400)
	frame := make([]byte, 0, 16+len(payload)+TagSize)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		ctr, err := si.NextSendCounter()
		if err != nil {
			b.Fatal(err)
		}
		f := frame[:16]
		fmpHeader(f, len(payload), ctr)
		if _, err := si.Seal(f, ctr, f[:16], payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen1400(b *testing.B) {
	si, sr := benchSessions(b)
	payload := make([]byte, 1400)
	// Pre-seal a ring of frames with consecutive counters; Session.Open is
	// measured with its replay check and accept.
	const ring = 4096
	frames := make([][]byte, ring)
	for i := range frames {
		ctr, _ := si.NextSendCounter()
		f := make([]byte, 16, 16+len(payload)+TagSize)
		fmpHeader(f, len(payload), ctr)
		frames[i], _ = si.Seal(f, ctr, f[:16], payload)
	}
	out := make([]byte, 0, len(payload))
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == ring {
			// Replays would be rejected; start the window over.
			sr.Replay().Reset()
			i = 0
		}
		f := frames[i]
		if _, err := sr.Open(out[:0], binary.LittleEndian.Uint64(f[8:16]), f[:16], f[16:]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
