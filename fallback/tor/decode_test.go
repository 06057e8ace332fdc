package tor

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
)

func testKey(b byte) [32]byte {
	var k [32]byte
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

func TestOnionRoundTrip(t *testing.T) {
	k := testKey(7)
	a := OnionAddress(k)
	if len(a) != 62 {
		t.Fatalf("len %d: %s", len(a), a)
	}
	got, key, err := ParseOnion(strings.ToUpper(a))
	if err != nil || got != a || key != k {
		t.Fatalf("ParseOnion(%s) = %s, %x, %v", a, got, key, err)
	}
}

func TestOnionMalformed(t *testing.T) {
	good := OnionAddress(testKey(1))
	label := good[:56]
	cases := map[string]string{
		"":                                 "does not end in .onion",
		"example.com":                      "does not end in .onion",
		"abc.onion":                        "want 56",
		strings.Repeat("a", 56) + ".onion": "version",
		strings.Repeat("1", 56) + ".onion": "base32",
		"x" + good:                         "want 56",
		strings.Repeat("a", 300):           "bytes long",
	}
	// A changed key character breaks the checksum.
	c := byte('a')
	if label[0] == 'a' {
		c = 'b'
	}
	cases[string(c)+good[1:]] = "checksum"
	for in, want := range cases {
		_, _, err := ParseOnion(in)
		var oe *OnionError
		if !errors.As(err, &oe) || !errors.Is(err, ErrMalformedOnion) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOnion(%.70q) = %v, want *OnionError with %q", in, err, want)
		}
	}
}

func FuzzParseOnion(f *testing.F) {
	f.Add(OnionAddress(testKey(3)))
	f.Add("abc.onion")
	f.Add(strings.Repeat("a", 56) + ".onion")
	f.Fuzz(func(t *testing.T, s string) {
		onion, key, err := ParseOnion(s)
		if err != nil {
			if !errors.Is(err, ErrMalformedOnion) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if OnionAddress(key) != onion || !strings.EqualFold(onion, s) {
			t.Fatalf("%q parsed as %q", s, onion)
		}
	})
}

func TestReplyNamed(t *testing.T) {
	names := map[byte]string{1: "general failure", 2: "not allowed", 3: "network unreachable", 4: "host unreachable",
		5: "connection refused", 6: "TTL expired", 7: "command not supported", 8: "address type not supported",
		0xF6: "invalid onion address", 0x42: "unassigned reply code 0x42"}
	for code, want := range names {
		_, err := readConnectReply(bytes.NewReader([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}))
		var re *ReplyError
		if !errors.As(err, &re) || re.Code != code || !strings.Contains(err.Error(), want) {
			t.Errorf("code 0x%02x: %v, want %q", code, err, want)
		}
		if errors.Is(err, syscall.ECONNREFUSED) != (code == 5) {
			t.Errorf("code 0x%02x: Is(ECONNREFUSED) wrong", code)
		}
	}
	ap, err := readConnectReply(bytes.NewReader([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0x1f, 0x90}))
	if err != nil || ap.String() != "127.0.0.1:8080" {
		t.Fatalf("success reply: %v %v", ap, err)
	}
	if _, err := readConnectReply(bytes.NewReader([]byte{5, 0, 0, 3, 3, 'a', 'b', 'c', 0, 1})); err != nil {
		t.Fatalf("domain reply: %v", err)
	}
}

func FuzzReadConnectReply(f *testing.F) {
	f.Add([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0x1f, 0x90})
	f.Add([]byte{5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1})
	f.Add([]byte{5, 0, 0, 3, 3, 'a', 'b', 'c', 0, 1})
	f.Add([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ap, err := readConnectReply(bytes.NewReader(b))
		if err != nil {
			var re *ReplyError
			if errors.As(err, &re) && (len(b) < 2 || re.Code != b[1] || re.Code == 0) {
				t.Fatalf("reply error %v from %x", err, b)
			}
			return
		}
		if len(b) < 8 || b[0] != 5 || b[1] != 0 || b[2] != 0 {
			t.Fatalf("accepted %x as %v", b, ap)
		}
	})
}

func TestSocksHandshakeBytes(t *testing.T) {
	srv := bytes.NewBuffer([]byte{5, 2, 1, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	var sent bytes.Buffer
	err := socksHandshake(readWriter{srv, &sent}, socksTarget{Host: "ab.onion", Port: 443}, "fips", "pw")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{5, 1, 2, 1, 4, 'f', 'i', 'p', 's', 2, 'p', 'w', 5, 1, 0, 3, 8, 'a', 'b', '.', 'o', 'n', 'i', 'o', 'n', 1, 187}
	if !bytes.Equal(sent.Bytes(), want) {
		t.Fatalf("sent %v\nwant %v", sent.Bytes(), want)
	}
	for _, tc := range []struct {
		in   []byte
		want error
	}{
		{[]byte{5, 0xFF}, ErrSOCKSAuth},
		{[]byte{4, 2}, ErrSOCKSProtocol},
		{[]byte{5, 2, 1, 1}, ErrSOCKSAuth},
	} {
		err := socksHandshake(readWriter{bytes.NewBuffer(tc.in), &bytes.Buffer{}}, socksTarget{Host: "a.b", Port: 1}, "u", "p")
		if !errors.Is(err, tc.want) {
			t.Errorf("%v: %v, want %v", tc.in, err, tc.want)
		}
	}
}

type readWriter struct {
	r *bytes.Buffer
	w *bytes.Buffer
}

func (rw readWriter) Read(p []byte) (int, error)  { return rw.r.Read(p) }
func (rw readWriter) Write(p []byte) (int, error) { return rw.w.Write(p) }

func TestReadReply(t *testing.T) {
	in := "250-ServiceID=abc\r\n250-PrivateKey=ED25519-V3:xyz\r\n250+data=\r\nline1\r\n..dotted\r\n.\r\n250 OK\r\n515 Authentication failed: bad\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	rep, err := ReadReply(r)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Values()
	if rep.Code != 250 || rep.Text != "OK" || v["ServiceID"] != "abc" || v["PrivateKey"] != "ED25519-V3:xyz" ||
		len(rep.Lines) != 5 || rep.Lines[4] != ".dotted" {
		t.Fatalf("%+v", rep)
	}
	rep, err = ReadReply(r)
	if err != nil || rep.Code != 515 {
		t.Fatalf("%+v %v", rep, err)
	}
	for _, bad := range []string{"", "25\r\n", "abc OK\r\n", "250*OK\r\n", "250-a\r\n251 OK\r\n", "099 x\r\n",
		"250+x\r\nno end\r\n", strings.Repeat("250-"+strings.Repeat("x", 10)+"\r\n", maxControlLines+1),
		"250 " + strings.Repeat("x", maxControlLine+1) + "\r\n"} {
		if _, err := ReadReply(bufio.NewReader(strings.NewReader(bad))); !errors.Is(err, ErrControlSyntax) {
			t.Errorf("%.40q: %v, want ErrControlSyntax", bad, err)
		}
	}
}

func FuzzReadReply(f *testing.F) {
	f.Add("250 OK\r\n")
	f.Add("250-ServiceID=abc\r\n250 OK\r\n")
	f.Add("250+x=\r\n.a\r\n.\r\n250 OK\r\n")
	f.Add("515 Authentication failed\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := ReadReply(bufio.NewReaderSize(strings.NewReader(s), 16))
		if err != nil {
			if !errors.Is(err, ErrControlSyntax) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if rep.Code < 100 || rep.Code > 699 || len(rep.Lines) > maxControlLines {
			t.Fatalf("accepted %+v", rep)
		}
	})
}

func TestParseAuth(t *testing.T) {
	for in, want := range map[string]Auth{
		"cookie":            {CookiePath: "/def"},
		"cookie:/x/y":       {CookiePath: "/x/y"},
		"password:s3cr\"et": {Password: "s3cr\"et"},
	} {
		if got, err := ParseAuth(in, "/def"); err != nil || got != want {
			t.Errorf("ParseAuth(%q) = %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "none", "cookie:", "Cookie"} {
		if _, err := ParseAuth(bad, "/def"); !errors.Is(err, ErrAuthConfig) {
			t.Errorf("ParseAuth(%q): %v", bad, err)
		}
	}
	if q := quoteControl(`a"b\c`); q != `"a\"b\\c"` {
		t.Errorf("quote %s", q)
	}
}
