package noise

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// runIK runs a whole IK handshake, passing each message through tamper
// (which may modify it in place) before it is read. It returns the first
// error any step hits.
func runIK(i, r *secp256k1.PrivateKey, rs *secp256k1.PublicKey, tamper func(int, []byte), iopts, ropts []Option) (si, sr *Session, err error) {
	ini, err := NewIKInitiator(i, rs, epochI, iopts...)
	if err != nil {
		return nil, nil, err
	}
	res, err := NewIKResponder(r, epochR, ropts...)
	if err != nil {
		return nil, nil, err
	}
	m1, err := ini.WriteMessage1(nil)
	if err != nil {
		return nil, nil, err
	}
	if len(m1) != IKMsg1Size {
		return nil, nil, fmt.Errorf("msg1 is %d bytes", len(m1))
	}
	if tamper != nil {
		tamper(0, m1)
	}
	learned, ep, err := res.ReadMessage1(m1)
	if err != nil {
		return nil, nil, err
	}
	if !learned.IsEqual(i.PubKey()) || ep != epochI || !res.RemoteStatic().IsEqual(i.PubKey()) {
		return nil, nil, errors.New("responder learned the wrong static or epoch")
	}
	m2, err := res.WriteMessage2(nil)
	if err != nil {
		return nil, nil, err
	}
	if len(m2) != IKMsg2Size {
		return nil, nil, fmt.Errorf("msg2 is %d bytes", len(m2))
	}
	if tamper != nil {
		tamper(1, m2)
	}
	if ep, err = ini.ReadMessage2(m2); err != nil {
		return nil, nil, err
	}
	if ep != epochR {
		return nil, nil, errors.New("initiator learned the wrong epoch")
	}
	if !ini.Complete() || !res.Complete() {
		return nil, nil, errors.New("not complete")
	}
	if si, err = ini.Session(); err != nil {
		return nil, nil, err
	}
	if sr, err = res.Session(); err != nil {
		return nil, nil, err
	}
	return si, sr, nil
}

// runXK is runIK for XK.
func runXK(i, r *secp256k1.PrivateKey, rs *secp256k1.PublicKey, tamper func(int, []byte), iopts, ropts []Option) (si, sr *Session, err error) {
	ini, err := NewXKInitiator(i, rs, epochI, iopts...)
	if err != nil {
		return nil, nil, err
	}
	res, err := NewXKResponder(r, epochR, ropts...)
	if err != nil {
		return nil, nil, err
	}
	m1, err := ini.WriteMessage1(nil)
	if err != nil {
		return nil, nil, err
	}
	if len(m1) != XKMsg1Size {
		return nil, nil, fmt.Errorf("msg1 is %d bytes", len(m1))
	}
	if tamper != nil {
		tamper(0, m1)
	}
	if err := res.ReadMessage1(m1); err != nil {
		return nil, nil, err
	}
	if res.RemoteStatic() != nil {
		return nil, nil, errors.New("XK responder knows the initiator before msg3")
	}
	m2, err := res.WriteMessage2(nil)
	if err != nil {
		return nil, nil, err
	}
	if len(m2) != XKMsg2Size {
		return nil, nil, fmt.Errorf("msg2 is %d bytes", len(m2))
	}
	if tamper != nil {
		tamper(1, m2)
	}
	ep, err := ini.ReadMessage2(m2)
	if err != nil {
		return nil, nil, err
	}
	if ep != epochR {
		return nil, nil, errors.New("initiator learned the wrong epoch")
	}
	m3, err := ini.WriteMessage3(nil)
	if err != nil {
		return nil, nil, err
	}
	if len(m3) != XKMsg3Size {
		return nil, nil, fmt.Errorf("msg3 is %d bytes", len(m3))
	}
	if tamper != nil {
		tamper(2, m3)
	}
	learned, ep, err := res.ReadMessage3(m3)
	if err != nil {
		return nil, nil, err
	}
	if !learned.IsEqual(i.PubKey()) || ep != epochI {
		return nil, nil, errors.New("responder learned the wrong static or epoch")
	}
	if si, err = ini.Session(); err != nil {
		return nil, nil, err
	}
	if sr, err = res.Session(); err != nil {
		return nil, nil, err
	}
	return si, sr, nil
}

type runner func(i, r *secp256k1.PrivateKey, rs *secp256k1.PublicKey, tamper func(int, []byte), iopts, ropts []Option) (*Session, *Session, error)

var patterns = []struct {
	name  string
	run   runner
	sizes []int
}{
	{"IK", runIK, []int{IKMsg1Size, IKMsg2Size}},
	{"XK", runXK, []int{XKMsg1Size, XKMsg2Size, XKMsg3Size}},
}

// exchange checks that both sessions talk to each other both ways with the
// FMP-style flow: reserve counter, header as AAD, seal, open.
func exchange(t *testing.T, si, sr *Session) {
	t.Helper()
	for dir, pair := range [][2]*Session{{si, sr}, {sr, si}} {
		for n := range 3 {
			ctr, err := pair[0].NextSendCounter()
			if err != nil || ctr != uint64(n) {
				t.Fatalf("dir %d: counter %d, %v", dir, ctr, err)
			}
			hdr := fmt.Appendf(nil, "hdr-%012d", ctr)
			msg := fmt.Appendf(nil, "message %d in direction %d", n, dir)
			ct, err := pair[0].Seal(append([]byte(nil), hdr...), ctr, hdr, msg)
			if err != nil {
				t.Fatal(err)
			}
			pt, err := pair[1].Open(nil, ctr, ct[:len(hdr)], ct[len(hdr):])
			if err != nil || !bytes.Equal(pt, msg) {
				t.Fatalf("dir %d: open %q, %v", dir, pt, err)
			}
			if _, err := pair[1].Open(nil, ctr, ct[:len(hdr)], ct[len(hdr):]); !errors.Is(err, ErrReplay) {
				t.Fatalf("dir %d: replay not rejected: %v", dir, err)
			}
		}
	}
}

func TestHandshakeRandomKeys(t *testing.T) {
	for _, p := range patterns {
		t.Run(p.name, func(t *testing.T) {
			for range 5 {
				a, _ := secp256k1.GeneratePrivateKey()
				b, _ := secp256k1.GeneratePrivateKey()
				si, sr, err := p.run(a, b, b.PubKey(), nil, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if si.Role() != Initiator || sr.Role() != Responder {
					t.Fatal("roles")
				}
				if !sr.RemoteStatic().IsEqual(a.PubKey()) || !si.RemoteStatic().IsEqual(b.PubKey()) {
					t.Fatal("remote statics")
				}
				if si.RemoteEpoch() != epochR || sr.RemoteEpoch() != epochI {
					t.Fatal("remote epochs")
				}
				if si.HandshakeHash() != sr.HandshakeHash() {
					t.Fatal("handshake hashes differ")
				}
				exchange(t, si, sr)
			}
		})
	}
}

// Odd-parity responder (§7.1 item 3): B's key is 03‖x, the initiator knows
// only x and uses the even lift; the handshake must still succeed, with the
// upstream message sizes.
func TestOddParityResponder(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	if b.PubKey().SerializeCompressed()[0] != 0x03 {
		t.Fatal("B must have odd parity")
	}
	lifted := evenLift(t, b.PubKey())
	if lifted.IsEqual(b.PubKey()) {
		t.Fatal("even lift must differ from B's real key")
	}
	for _, p := range patterns {
		t.Run(p.name, func(t *testing.T) {
			var sizes []int
			si, sr, err := p.run(a, b, lifted, func(_ int, m []byte) { sizes = append(sizes, len(m)) }, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(sizes) != fmt.Sprint(p.sizes) {
				t.Fatalf("message sizes %v, want %v", sizes, p.sizes)
			}
			// The responder learned A with A's real parity; the initiator
			// holds the lifted key it was given.
			if !sr.RemoteStatic().IsEqual(a.PubKey()) || !si.RemoteStatic().IsEqual(lifted) {
				t.Fatal("remote statics")
			}
			exchange(t, si, sr)
		})
	}
	// The same with the real odd key gives the same transport keys: the
	// pre-message and DH are parity-independent.
	for _, p := range patterns {
		si1, _, err := p.run(a, b, lifted, nil, []Option{fixedRand(0x55)}, []Option{fixedRand(0x66)})
		if err != nil {
			t.Fatal(err)
		}
		si2, _, err := p.run(a, b, b.PubKey(), nil, []Option{fixedRand(0x55)}, []Option{fixedRand(0x66)})
		if err != nil {
			t.Fatal(err)
		}
		x, _ := si1.Seal(nil, 0, nil, []byte("p"))
		y, _ := si2.Seal(nil, 0, nil, []byte("p"))
		if !bytes.Equal(x, y) {
			t.Errorf("%s: lifted and real responder key give different keys", p.name)
		}
	}
}

// isTyped reports whether err is one of the errors a bad message may cause.
func isTyped(err error) bool {
	return errors.Is(err, ErrDecrypt) || errors.Is(err, ErrInvalidPublicKey) || errors.Is(err, ErrMessageLength)
}

// ephemeralAt reports whether message idx starts with an ephemeral key:
// IK msg1/msg2 and XK msg1/msg2 do, XK msg3 does not.
func ephemeralAt(idx int) bool { return idx == 0 || idx == 1 }

// Flipping any bit of any handshake message makes the handshake fail with
// a typed error — except the 0x02↔0x03 flip of an ephemeral key's prefix,
// which upstream's x-only DH and unused h cannot see: that handshake
// completes with the untampered keys (documented in doc.go).
func TestTamperEveryByte(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	iopts, ropts := []Option{fixedRand(0x11)}, []Option{fixedRand(0x22)}
	for _, p := range patterns {
		t.Run(p.name, func(t *testing.T) {
			ref, _, err := p.run(a, b, b.PubKey(), nil, iopts, ropts)
			if err != nil {
				t.Fatal(err)
			}
			refCT, _ := ref.Seal(nil, 0, nil, []byte("probe"))
			for idx, size := range p.sizes {
				for pos := range size {
					for _, mask := range []byte{0x01, 0x80} {
						si, _, err := p.run(a, b, b.PubKey(), func(i int, m []byte) {
							if i == idx {
								m[pos] ^= mask
							}
						}, iopts, ropts)
						if pos == 0 && mask == 0x01 && ephemeralAt(idx) {
							if err != nil {
								t.Fatalf("msg%d parity flip: %v", idx+1, err)
							}
							ct, _ := si.Seal(nil, 0, nil, []byte("probe"))
							if !bytes.Equal(ct, refCT) {
								t.Fatalf("msg%d parity flip changed the keys", idx+1)
							}
							continue
						}
						if err == nil {
							t.Fatalf("msg%d byte %d ^%#x: handshake succeeded", idx+1, pos, mask)
						}
						if !isTyped(err) {
							t.Fatalf("msg%d byte %d ^%#x: untyped error %v", idx+1, pos, mask, err)
						}
					}
				}
			}
		})
	}
}

func TestWrongLength(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	ir, _ := NewIKResponder(b, epochR)
	for _, n := range []int{0, 10, IKMsg1Size - 1, IKMsg1Size + 1, XKMsg1Size} {
		if _, _, err := ir.ReadMessage1(make([]byte, n)); !errors.Is(err, ErrMessageLength) {
			t.Errorf("IK msg1 len %d: %v", n, err)
		}
	}
	xr, _ := NewXKResponder(b, epochR)
	for _, n := range []int{0, 10, XKMsg1Size + 1, IKMsg1Size} {
		if err := xr.ReadMessage1(make([]byte, n)); !errors.Is(err, ErrMessageLength) {
			t.Errorf("XK msg1 len %d: %v", n, err)
		}
	}
	ii, _ := NewIKInitiator(a, b.PubKey(), epochI)
	ii.WriteMessage1(nil)
	if _, err := ii.ReadMessage2(make([]byte, IKMsg2Size+1)); !errors.Is(err, ErrMessageLength) {
		t.Errorf("IK msg2: %v", err)
	}
	xi, _ := NewXKInitiator(a, b.PubKey(), epochI)
	m1, _ := xi.WriteMessage1(nil)
	if _, err := xi.ReadMessage2(make([]byte, XKMsg2Size-1)); !errors.Is(err, ErrMessageLength) {
		t.Errorf("XK msg2: %v", err)
	}
	xr.ReadMessage1(m1)
	xr.WriteMessage2(nil)
	for _, n := range []int{10, XKMsg3Size + 1} {
		if _, _, err := xr.ReadMessage3(make([]byte, n)); !errors.Is(err, ErrMessageLength) {
			t.Errorf("XK msg3 len %d: %v", n, err)
		}
	}
}

func TestInvalidEphemeral(t *testing.T) {
	b := mustKey(t, hexB)
	for _, e := range [][]byte{
		append([]byte{0x04}, make([]byte, 32)...),               // bad prefix
		append([]byte{0x02}, bytes.Repeat([]byte{0xff}, 32)...), // x ≥ p
		append([]byte{0x02}, make([]byte, 32)...),               // x = 0: not on the curve
	} {
		r, _ := NewIKResponder(b, epochR)
		msg := append(append([]byte(nil), e...), make([]byte, IKMsg1Size-PubKeySize)...)
		if _, _, err := r.ReadMessage1(msg); !errors.Is(err, ErrInvalidPublicKey) {
			t.Errorf("IK %x: %v", e[:2], err)
		}
		x, _ := NewXKResponder(b, epochR)
		if err := x.ReadMessage1(e); !errors.Is(err, ErrInvalidPublicKey) {
			t.Errorf("XK %x: %v", e[:2], err)
		}
	}
}

func TestWrongState(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	ws := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrWrongState) {
			t.Errorf("%s: %v, want ErrWrongState", what, err)
		}
	}
	ii, _ := NewIKInitiator(a, b.PubKey(), epochI)
	ir, _ := NewIKResponder(b, epochR)
	_, err := ii.ReadMessage2(make([]byte, IKMsg2Size))
	ws("IK read msg2 first", err)
	_, err = ir.WriteMessage2(nil)
	ws("IK write msg2 first", err)
	_, err = ii.Session()
	ws("IK session early", err)
	m1, _ := ii.WriteMessage1(nil)
	_, err = ii.WriteMessage1(nil)
	ws("IK write msg1 twice", err)
	ir.ReadMessage1(m1)
	_, _, err = ir.ReadMessage1(m1)
	ws("IK read msg1 twice", err)
	m2, _ := ir.WriteMessage2(nil)
	ii.ReadMessage2(m2)
	if _, err := ii.Session(); err != nil {
		t.Fatal(err)
	}
	_, err = ii.Session()
	ws("IK session twice", err)

	xi, _ := NewXKInitiator(a, b.PubKey(), epochI)
	xr, _ := NewXKResponder(b, epochR)
	_, err = xi.WriteMessage3(nil)
	ws("XK write msg3 first", err)
	_, _, err = xr.ReadMessage3(make([]byte, XKMsg3Size))
	ws("XK read msg3 first", err)
	x1, _ := xi.WriteMessage1(nil)
	xr.ReadMessage1(x1)
	_, err = xr.Session()
	ws("XK responder session before msg3", err)
	x2, _ := xr.WriteMessage2(nil)
	xi.ReadMessage2(x2)
	_, err = xi.ReadMessage2(x2)
	ws("XK read msg2 twice", err)
	_, err = xi.Session()
	ws("XK initiator session before msg3", err)
}

func TestConstructorValidation(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	var zero secp256k1.PrivateKey
	if _, err := NewIKInitiator(nil, b.PubKey(), epochI); !errors.Is(err, ErrInvalidPrivateKey) {
		t.Error("nil static:", err)
	}
	if _, err := NewXKResponder(&zero, epochR); !errors.Is(err, ErrInvalidPrivateKey) {
		t.Error("zero static:", err)
	}
	if _, err := NewXKInitiator(a, nil, epochI); !errors.Is(err, ErrInvalidPublicKey) {
		t.Error("nil remote:", err)
	}
	var x, y secp256k1.FieldVal
	x.SetInt(1)
	y.SetInt(1)
	if _, err := NewIKInitiator(a, secp256k1.NewPublicKey(&x, &y), epochI); !errors.Is(err, ErrInvalidPublicKey) {
		t.Error("off-curve remote:", err)
	}
}

// A failed read leaves the handshake as it was, so the genuine message can
// still be read afterwards (upstream guarantees this only for XK msg2, via
// try_read_xk_message_2).
func TestFailedReadLeavesStateUntouched(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	ii, _ := NewIKInitiator(a, b.PubKey(), epochI)
	ir, _ := NewIKResponder(b, epochR)
	m1, _ := ii.WriteMessage1(nil)
	bad := append([]byte(nil), m1...)
	bad[50] ^= 1
	if _, _, err := ir.ReadMessage1(bad); !errors.Is(err, ErrDecrypt) {
		t.Fatal(err)
	}
	if _, _, err := ir.ReadMessage1(m1); err != nil {
		t.Fatal("genuine msg1 after a bad one:", err)
	}
	m2, _ := ir.WriteMessage2(nil)
	bad = append(bad[:0], m2...)
	bad[40] ^= 1
	if _, err := ii.ReadMessage2(bad); !errors.Is(err, ErrDecrypt) {
		t.Fatal(err)
	}
	if _, err := ii.ReadMessage2(m2); err != nil {
		t.Fatal("genuine msg2 after a bad one:", err)
	}

	xi, _ := NewXKInitiator(a, b.PubKey(), epochI)
	xr, _ := NewXKResponder(b, epochR)
	x1, _ := xi.WriteMessage1(nil)
	xr.ReadMessage1(x1)
	x2, _ := xr.WriteMessage2(nil)
	bad = append(bad[:0], x2...)
	bad[50] ^= 1
	if _, err := xi.ReadMessage2(bad); !errors.Is(err, ErrDecrypt) {
		t.Fatal(err)
	}
	if _, err := xi.ReadMessage2(x2); err != nil {
		t.Fatal("genuine XK msg2 after a bad one:", err)
	}
	x3, _ := xi.WriteMessage3(nil)
	bad = append(bad[:0], x3...)
	bad[60] ^= 1
	if _, _, err := xr.ReadMessage3(bad); !errors.Is(err, ErrDecrypt) {
		t.Fatal(err)
	}
	if _, _, err := xr.ReadMessage3(x3); err != nil {
		t.Fatal("genuine XK msg3 after a bad one:", err)
	}
}

func TestRandFailure(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	boom := errors.New("boom")
	ii, _ := NewIKInitiator(a, b.PubKey(), epochI, WithRand(iotest.ErrReader(boom)))
	if _, err := ii.WriteMessage1(nil); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	// Nothing changed: the state machine is still at the start.
	if _, err := ii.ReadMessage2(make([]byte, IKMsg2Size)); !errors.Is(err, ErrWrongState) {
		t.Fatal(err)
	}
}

// No Stringer or GoStringer prints key material.
func TestNoSecretsInFormatting(t *testing.T) {
	a, b := mustKey(t, hexA), mustKey(t, hexB)
	ii, _ := NewIKInitiator(a, b.PubKey(), epochI, fixedRand(0x11))
	ir, _ := NewIKResponder(b, epochR, fixedRand(0x22))
	m1, _ := ii.WriteMessage1(nil)
	ir.ReadMessage1(m1)
	m2, _ := ir.WriteMessage2(nil)
	ii.ReadMessage2(m2)
	fi := fmt.Sprintf("%v %+v %#v %s", ii, ii, ii, ii)
	si, _ := ii.Session()
	fs := fmt.Sprintf("%v %+v %#v %s %v %#v", si, si, si, si, si.Send(), si.Recv())
	for _, out := range []string{fi, fs} {
		for _, secret := range []string{hexA[:16], vecIKK1[:16], vecIKK2[:16], "1111111111111111"} {
			if strings.Contains(out, secret) {
				t.Errorf("formatted state contains %s: %s", secret, out)
			}
		}
	}
	if !strings.Contains(fs, "redacted") && !strings.Contains(fs, "Session") {
		t.Errorf("unexpected formatting %q", fs)
	}
}
