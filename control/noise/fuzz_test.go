package noise

import (
	"errors"
	"testing"
)

// Every reader, fed arbitrary bytes, must not panic and must fail only
// with the typed errors. The seeds include the genuine message, which must
// succeed.

func fuzzKeys(t testing.TB) (a, b []byte) { return mustHex(t, hexA), mustHex(t, hexB) }

func checkFuzzErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && !isTyped(err) {
		t.Fatalf("untyped error: %v", err)
	}
}

// seedsFrom adds the genuine message, truncations and corruptions.
func seedsFrom(f *testing.F, msg []byte) {
	f.Add(msg)
	f.Add(msg[:len(msg)-1])
	f.Add(append(append([]byte(nil), msg...), 0))
	f.Add(make([]byte, len(msg)))
	bad := append([]byte(nil), msg...)
	bad[len(bad)-1] ^= 1
	f.Add(bad)
	f.Add([]byte{})
}

func FuzzIKReadMessage1(f *testing.F) {
	ha, hb := fuzzKeys(f)
	a, _ := parsePrivateKey(ha)
	b, _ := parsePrivateKey(hb)
	ini, _ := NewIKInitiator(a, b.PubKey(), epochI, fixedRand(0x11))
	m1, _ := ini.WriteMessage1(nil)
	seedsFrom(f, m1)
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := NewIKResponder(b, epochR, fixedRand(0x22))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = r.ReadMessage1(msg)
		checkFuzzErr(t, err)
	})
}

func FuzzIKReadMessage2(f *testing.F) {
	ha, hb := fuzzKeys(f)
	a, _ := parsePrivateKey(ha)
	b, _ := parsePrivateKey(hb)
	ini, _ := NewIKInitiator(a, b.PubKey(), epochI, fixedRand(0x11))
	m1, _ := ini.WriteMessage1(nil)
	res, _ := NewIKResponder(b, epochR, fixedRand(0x22))
	res.ReadMessage1(m1)
	m2, _ := res.WriteMessage2(nil)
	seedsFrom(f, m2)
	f.Fuzz(func(t *testing.T, msg []byte) {
		ini, err := NewIKInitiator(a, b.PubKey(), epochI, fixedRand(0x11))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ini.WriteMessage1(nil); err != nil {
			t.Fatal(err)
		}
		_, err = ini.ReadMessage2(msg)
		checkFuzzErr(t, err)
	})
}

func FuzzXKReadMessage1(f *testing.F) {
	ha, hb := fuzzKeys(f)
	a, _ := parsePrivateKey(ha)
	b, _ := parsePrivateKey(hb)
	ini, _ := NewXKInitiator(a, b.PubKey(), epochI, fixedRand(0x33))
	m1, _ := ini.WriteMessage1(nil)
	seedsFrom(f, m1)
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := NewXKResponder(b, epochR, fixedRand(0x44))
		if err != nil {
			t.Fatal(err)
		}
		checkFuzzErr(t, r.ReadMessage1(msg))
	})
}

func FuzzXKReadMessage2(f *testing.F) {
	ha, hb := fuzzKeys(f)
	a, _ := parsePrivateKey(ha)
	b, _ := parsePrivateKey(hb)
	ini, _ := NewXKInitiator(a, b.PubKey(), epochI, fixedRand(0x33))
	m1, _ := ini.WriteMessage1(nil)
	res, _ := NewXKResponder(b, epochR, fixedRand(0x44))
	res.ReadMessage1(m1)
	m2, _ := res.WriteMessage2(nil)
	seedsFrom(f, m2)
	f.Fuzz(func(t *testing.T, msg []byte) {
		ini, err := NewXKInitiator(a, b.PubKey(), epochI, fixedRand(0x33))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ini.WriteMessage1(nil); err != nil {
			t.Fatal(err)
		}
		_, err = ini.ReadMessage2(msg)
		checkFuzzErr(t, err)
	})
}

func FuzzXKReadMessage3(f *testing.F) {
	ha, hb := fuzzKeys(f)
	a, _ := parsePrivateKey(ha)
	b, _ := parsePrivateKey(hb)
	run := func() (*XKInitiator, *XKResponder) {
		ini, _ := NewXKInitiator(a, b.PubKey(), epochI, fixedRand(0x33))
		res, _ := NewXKResponder(b, epochR, fixedRand(0x44))
		m1, _ := ini.WriteMessage1(nil)
		if err := res.ReadMessage1(m1); err != nil {
			f.Fatal(err)
		}
		m2, _ := res.WriteMessage2(nil)
		if _, err := ini.ReadMessage2(m2); err != nil {
			f.Fatal(err)
		}
		return ini, res
	}
	ini, _ := run()
	m3, _ := ini.WriteMessage3(nil)
	seedsFrom(f, m3)
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, res := run()
		_, _, err := res.ReadMessage3(msg)
		checkFuzzErr(t, err)
	})
}

func FuzzSessionOpen(f *testing.F) {
	si, sr := testSessions(f)
	hdr := make([]byte, 16)
	fmpHeader(hdr, 5, 0)
	ct, _ := si.Seal(nil, 0, hdr, []byte("hello"))
	f.Add(uint64(0), hdr, ct)
	f.Add(uint64(1), hdr, ct[:TagSize])
	f.Add(uint64(1<<40), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, ctr uint64, ad, ct []byte) {
		before := *sr.Replay()
		_, err := sr.Open(nil, ctr, ad, ct)
		if err == nil {
			sr.Replay().Reset() // a genuine seed: let it succeed again next time
			return
		}
		if !isTyped(err) && !errors.Is(err, ErrReplay) && !errors.Is(err, ErrMessageTooShort) && !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("untyped error %v", err)
		}
		if *sr.Replay() != before {
			t.Fatal("a failed open changed the replay window")
		}
	})
}
