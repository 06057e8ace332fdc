package client

import (
	"errors"
	"syscall"
	"testing"

	"github.com/fips-go/fips/control/identity"
)

func TestParseAddr(t *testing.T) {
	id, _ := identity.Generate(nil)
	npub := id.Npub()
	a, err := ParseAddr(npub + ":4242")
	if err != nil || a.Key != id.PublicKey() || a.Port != 4242 || a.String() != npub+":4242" {
		t.Fatalf("%v, %v", a, err)
	}
	for _, bad := range []string{npub, npub + ":", npub + ":65536", npub + ":-1", "npub1abc:4242", ":4242",
		id.Secret().Nsec() + ":4242"} {
		if _, err := ParseAddr(bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestDecodeReply(t *testing.T) {
	if d, err := decodeReply("listen", []byte(`{"status":"ok","data":{"local_port":4242}}`)); err != nil || string(d) != `{"local_port":4242}` {
		t.Fatalf("%s, %v", d, err)
	}
	for line, want := range map[string]syscall.Errno{
		`{"status":"error","data":{"errno":"EADDRINUSE"},"message":"port 4242 is already in use on this node"}`: syscall.EADDRINUSE,
		`{"status":"error","data":{"errno":"EMFILE"}}`:                                                          syscall.EMFILE,
		`{"status":"error","data":{"errno":"EWHATEVER"}}`:                                                       syscall.ECONNREFUSED,
		`{"status":"error","message":"an old daemon"}`:                                                          syscall.ECONNREFUSED,
		`{"status":"error","data":{"errno":"EADDRNOTAVAIL"}}`:                                                   syscall.EADDRNOTAVAIL,
	} {
		_, err := decodeReply("connect", []byte(line))
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", line, err, want)
		}
	}
	for _, line := range []string{`{"status":"maybe"}`, `not json`, `{}`} {
		if _, err := decodeReply("connect", []byte(line)); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// FuzzDecodeReply: any line is data, an *Error or ErrProtocol.
func FuzzDecodeReply(f *testing.F) {
	f.Add([]byte(`{"status":"ok","data":{"flow_id":1}}`))
	f.Add([]byte(`{"status":"error","data":{"errno":"EINVAL"},"message":"x"}`))
	f.Add([]byte(`{"status":"error","data":7}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		_, err := decodeReply("connect", line)
		var e *Error
		if err != nil && !errors.As(err, &e) && !errors.Is(err, ErrProtocol) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

// FuzzParseAddr: what parses prints back to itself.
func FuzzParseAddr(f *testing.F) {
	id, _ := identity.Generate(nil)
	f.Add(id.Npub() + ":4242")
	f.Add("npub1:1")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			if !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		b, err := ParseAddr(a.String())
		if err != nil || b != a {
			t.Fatalf("%q → %v → %v, %v", s, a, b, err)
		}
	})
}

// FuzzDecodeArrival: an arrival decodes to two ends with valid keys, or
// to ErrProtocol.
func FuzzDecodeArrival(f *testing.F) {
	id, _ := identity.Generate(nil)
	f.Add([]byte(`{"flow_id":9,"held":1,"local_port":4242,"max_payload":1362,"node":"` + id.Npub() +
		`","peer":"` + id.Npub() + `","remote_port":5000}`))
	f.Add([]byte(`{"flow_id":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, local, remote, err := decodeArrival(b)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := identity.DecodeNpub(local.Key.Npub()); err != nil {
			t.Fatal(err)
		}
		if _, err := identity.DecodeNpub(remote.Key.Npub()); err != nil {
			t.Fatal(err)
		}
	})
}
