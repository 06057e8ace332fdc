package identity

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/bech32"
)

// Pinned upstream vectors (wire-and-crypto.md §7.1 items 1, 2, 4).
var fixturePairs = []struct{ secret, npub string }{
	{"abababababababababababababababababababababababababababababababab", "npub1sx42mj99aql52aklsg70y2jmr95u7uz2p40k769aw46ppjv302kqkhmu5r"},
	{"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20", "npub1sjlh2c3x9w7kjsqg2ay080n2lff2uvt325vpan33ke34rn8l5jcqawh57m"},
	{"b102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fb0", "npub1tdwa4vjrjl33pcjdpf2t4p027nl86xrx24g4d3avg4vwvayr3g8qhd84le"},
	{"c102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fc0", "npub1cld9yay0u24davpu6c35l4vldrhzvaq66pcqtg9a0j2cnjrn9rtsxx2pe6"},
	{"d102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fd0", "npub1n9lpnv0592cc2ps6nm0ca3qls642vx7yjsv35rkxqzj2vgds52sqgpverl"},
	{"e102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fe0", "npub1wf8akf8lu2zdkjkmwhl75pqvven654mpv4sz2x2tprl5265mgrzq8nhak4"},
	{"nsec1egyrmekfw3u4l88v8zhrak9uht503s2kvn9v49tqgp6c5l2yuxgsv386l0", "npub1x5z9rwzzm26q9verutx4aajhf2zw2pyp34c6whhde2zduxqav40qgq36l6"},
	{"nsec1afh3nysthqh47awpdewcw59wvvp499f8dvlyclmnv4gvpxdk56dsa6eqsn", "npub1ytrut7gjncn2zfnhn56c0zgftf0w6p99gf6fu8j73hzw5603zglqc9av6c"},
	{"9e688d0879fa9cd025fea0487ac23495080e3de626070fdb9b78dc1f619dd453", "npub1jvren5hnege54lu3p2nzqacctmulqvkgp68yvfuj5jme5dtgnhxsdh6788"},
	{"3e4e10614c0490575fa5e994524ff3f4deaac2f20db189cc9c9a79da0d90f17a", "npub15h7z0ljzudqe9pgwx99cjsz2c0ennuyvkcc8zvtk3lg97xwzex9ska6g4y"},
	{"15148ed0131f7da43fd13e369dfedede14fb64698f3756636b569c3a3e87438f", "npub1zhezcykd0e34z4fxtranl45jaasgnlxv0kjqwlq2v56ggssn0w4qelcrvr"},
}

func TestFixtureKeyPairs(t *testing.T) {
	for _, p := range fixturePairs {
		sk, err := ParseSecretKey(p.secret)
		if err != nil {
			t.Fatalf("ParseSecretKey(%s): %v", p.secret, err)
		}
		if got := sk.PublicKey().Npub(); got != p.npub {
			t.Errorf("%s: npub %s, want %s", p.secret, got, p.npub)
		}
		pk, err := DecodeNpub(p.npub)
		if err != nil {
			t.Fatalf("DecodeNpub(%s): %v", p.npub, err)
		}
		if pk != sk.PublicKey() {
			t.Errorf("DecodeNpub(%s) = %x, want %x", p.npub, pk, sk.PublicKey())
		}
	}
}

func TestGoldenIdentity(t *testing.T) {
	// src/control/snapshots/show_status.json, TEST_SEED [0xAB; 32].
	sk, err := ParseSecretKey(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	id := New(sk)
	check := func(name, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	check("npub", id.Npub(), "npub1sx42mj99aql52aklsg70y2jmr95u7uz2p40k769aw46ppjv302kqkhmu5r")
	check("node_addr", id.NodeAddr().String(), "1b4788b7ab7a436a611fc59fb1e34c6e")
	check("ipv6", id.IPv6().String(), "fd1b:4788:b7ab:7a43:6a61:1fc5:9fb1:e34c")
	check("xonly", id.PublicKey().Hex(), "81aaadc8a5e83f4576df823cf22a5b1969cf704a0d5f6f68bd757410c9917aac")
	check("nsec", sk.Nsec(), "nsec14w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w4s5l3rd9")
	check("hex", sk.Hex(), strings.Repeat("ab", 32))
}

func TestDerivedIdentityVectors(t *testing.T) {
	// wire-and-crypto.md §7.2: keys A and B.
	for _, v := range []struct{ secret, xonly, nodeAddr, ipv6 string }{
		{"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
			"84bf7562262bbd6940085748f3be6afa52ae317155181ece31b66351ccffa4b0",
			"69e08d65cc3a6b9c2c2ac4bd405e4b0e", "fd69:e08d:65cc:3a6b:9c2c:2ac4:bd40:5e4b"},
		{"b102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fb0",
			"5b5ddab24397e310e24d0a54ba85eaf4fe7d1866555156c7ac4558e674838a0e",
			"8e302c287eb48d6268122fda760b7727", ""},
	} {
		sk, err := ParseSecretKey(v.secret)
		if err != nil {
			t.Fatal(err)
		}
		id := New(sk)
		if got := id.PublicKey().Hex(); got != v.xonly {
			t.Errorf("xonly %s, want %s", got, v.xonly)
		}
		if got := id.NodeAddr().String(); got != v.nodeAddr {
			t.Errorf("node_addr %s, want %s", got, v.nodeAddr)
		}
		if v.ipv6 != "" && id.IPv6().String() != v.ipv6 {
			t.Errorf("ipv6 %s, want %s", id.IPv6(), v.ipv6)
		}
	}
	// B has odd parity (§7.1 item 3): the compressed form starts 0x03.
	sk, _ := ParseSecretKey("b102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fb0")
	if c := sk.Private().PubKey().SerializeCompressed(); c[0] != 0x03 {
		t.Errorf("B compressed prefix %#x, want 0x03", c[0])
	}
}

func TestNIP19Rejections(t *testing.T) {
	// src/identity/tests.rs test_decode_npub_invalid_prefix: an nsec is not an npub.
	const nsec = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"
	if _, err := DecodeNpub(nsec); !errors.Is(err, ErrWrongHRP) {
		t.Errorf("DecodeNpub(nsec) error %v, want ErrWrongHRP", err)
	}
	sk, err := DecodeNsec(nsec)
	if err != nil {
		t.Fatal(err)
	}
	if got := sk.Hex(); got != "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa" {
		t.Errorf("nsec decodes to %s", got)
	}
	if _, err := DecodeNsec(fixturePairs[0].npub); !errors.Is(err, ErrWrongHRP) {
		t.Errorf("DecodeNsec(npub) error %v, want ErrWrongHRP", err)
	}
	// test_decode_npub_invalid_checksum.
	if _, err := DecodeNpub("npub1" + strings.Repeat("q", 58)); !errors.Is(err, ErrInvalidBech32) {
		t.Errorf("bad checksum error %v, want ErrInvalidBech32", err)
	}
	// A flipped character breaks the checksum.
	good := fixturePairs[1].npub
	bad := good[:10] + string(rune(good[10]^1)) + good[11:]
	if _, err := DecodeNpub(bad); !errors.Is(err, ErrInvalidBech32) {
		t.Errorf("flipped char error %v, want ErrInvalidBech32", err)
	}
	// Wrong payload length with a valid checksum.
	short, _ := bech32.EncodeFromBase256("npub", make([]byte, 31))
	if _, err := DecodeNpub(short); !errors.Is(err, ErrInvalidLength) {
		t.Errorf("31-byte npub error %v, want ErrInvalidLength", err)
	}
	// bech32m checksum over a valid key.
	pk, _ := DecodeNpub(good)
	conv, _ := bech32.ConvertBits(pk[:], 8, 5, true)
	m, _ := bech32.EncodeM("npub", conv)
	if _, err := DecodeNpub(m); !errors.Is(err, ErrInvalidBech32) {
		t.Errorf("bech32m npub error %v, want ErrInvalidBech32", err)
	}
	// An x coordinate with no curve point: x = 5 is not on secp256k1.
	var x [32]byte
	x[31] = 5
	offCurve, _ := bech32.EncodeFromBase256("npub", x[:])
	if _, err := DecodeNpub(offCurve); !errors.Is(err, ErrInvalidPublicKey) {
		t.Errorf("off-curve npub error %v, want ErrInvalidPublicKey", err)
	}
}

func TestSecretKeyRejections(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrInvalidLength},
		{strings.Repeat("0", 64), ErrInvalidSecret},
		{strings.Repeat("f", 64), ErrInvalidSecret}, // ≥ n
		{"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", ErrInvalidSecret}, // = n
		{strings.Repeat("zz", 32), ErrInvalidHex},
		{strings.Repeat("ab", 31), ErrInvalidLength},
		{"nsec1" + strings.Repeat("q", 58), ErrInvalidBech32},
	} {
		if _, err := ParseSecretKey(tc.in); !errors.Is(err, tc.want) {
			t.Errorf("ParseSecretKey(%q) error %v, want %v", tc.in, err, tc.want)
		}
	}
	// n-1 is the largest valid scalar.
	if _, err := ParseSecretKey("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140"); err != nil {
		t.Errorf("n-1 rejected: %v", err)
	}
}

func TestSecretNeverFormatted(t *testing.T) {
	sk, _ := ParseSecretKey(strings.Repeat("ab", 32))
	for _, s := range []string{fmt.Sprint(sk), fmt.Sprintf("%v %+v %#v %s", sk, sk, sk, sk)} {
		if strings.Contains(s, "abab") || strings.Contains(s, "nsec") {
			t.Errorf("secret leaked in %q", s)
		}
	}
}

func TestNodeAddrFormatting(t *testing.T) {
	// src/identity/tests.rs test_node_addr_display / test_node_addr_debug.
	a, err := ParseNodeAddr("0123456789abcdeffedcba9876543210")
	if err != nil {
		t.Fatal(err)
	}
	if a.String() != "0123456789abcdeffedcba9876543210" {
		t.Errorf("String %s", a)
	}
	if got := fmt.Sprintf("%#v", a); got != "NodeAddr(0123456789abcdef)" {
		t.Errorf("GoString %s", got)
	}
	if _, err := ParseNodeAddr("0123"); !errors.Is(err, ErrInvalidNodeAddr) {
		t.Errorf("short node addr error %v", err)
	}
	b := a
	b[15]++
	if !a.Less(b) || b.Less(a) || a.Compare(a) != 0 {
		t.Error("ordering is not bytewise")
	}
	p, ok := IPv6Prefix(a.IPv6())
	if !ok || !bytes.Equal(p[:], a[:15]) {
		t.Errorf("IPv6Prefix round trip: %x %v", p, ok)
	}
}

func TestSchnorrSignVerify(t *testing.T) {
	sk, _ := ParseSecretKey(fixturePairs[2].secret) // odd parity key
	pk := sk.PublicKey()
	msg := []byte("declaration bytes")
	sig, err := sk.Sign(msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pk.Verify(msg, sig[:]); err != nil {
		t.Fatalf("verify: %v", err)
	}
	sig2, _ := sk.Sign(msg, nil)
	if sig == sig2 {
		t.Error("signatures are deterministic; upstream uses random aux data")
	}
	if err := pk.Verify(msg, sig2[:]); err != nil {
		t.Fatalf("verify second: %v", err)
	}
	bad := sig
	bad[40] ^= 1
	if err := pk.Verify(msg, bad[:]); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("tampered sig error %v", err)
	}
	if err := pk.Verify([]byte("other"), sig[:]); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("other message error %v", err)
	}
	if err := pk.Verify(msg, sig[:63]); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("short sig error %v", err)
	}
	other, _ := ParseSecretKey(fixturePairs[1].secret)
	if err := other.PublicKey().Verify(msg, sig[:]); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("wrong key error %v", err)
	}
}

// TestSchnorrBIP340Vector checks verification against BIP-340's published
// test vector 1 (a raw 32-byte message), proving the signature flavour is
// BIP-340 and not decred's EC-Schnorr-DCRv0.
func TestSchnorrBIP340Vector(t *testing.T) {
	pkb, _ := hex.DecodeString("DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659")
	msg, _ := hex.DecodeString("243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89")
	sig, _ := hex.DecodeString("6896BD60EEAE296DB48A229FF71DFE071BDE413E6D43F917DC8DCF8C78DE33418906D11AC976ABCCB20B091292BFF4EA897EFCB639EA871CFA95F6DE339E4B0A")
	pk, err := ParsePublicKey(pkb)
	if err != nil {
		t.Fatal(err)
	}
	// Verify hashes its input first, so check the primitive directly.
	if err := verifyDigest(pk, msg, sig); err != nil {
		t.Fatalf("BIP-340 vector 1: %v", err)
	}
}
