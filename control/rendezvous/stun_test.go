package rendezvous

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/stun/v3"
)

func listen4(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSTUNDiscoverXORAndMapped(t *testing.T) {
	srv := startSTUN(t)
	c := listen4(t)
	r, err := Discover(context.Background(), c, []string{srv.addr()}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reflexive.String() != c.LocalAddr().String() || r.Server != srv.addr() {
		t.Errorf("reflexive %s (socket %s) server %s", r.Reflexive, c.LocalAddr(), r.Server)
	}
	srv.mu.Lock()
	raw := srv.lastRaw
	srv.mappedOnly = true
	srv.mapped = loopbackToDoc
	srv.mu.Unlock()
	// The request is upstream's: 20 bytes, type 0x0001, length 0, the cookie.
	if len(raw) != 20 || binary.BigEndian.Uint16(raw) != 0x0001 || binary.BigEndian.Uint16(raw[2:]) != 0 ||
		binary.BigEndian.Uint32(raw[4:]) != 0x2112A442 {
		t.Errorf("request bytes % x", raw)
	}
	r, err = Discover(context.Background(), c, []string{srv.addr()}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := loopbackToDoc(netip.MustParseAddrPort(c.LocalAddr().String())); r.Reflexive != want {
		t.Errorf("MAPPED-ADDRESS fallback gave %s, want %s", r.Reflexive, want)
	}
}

// Servers are tried in order, one request each: a silent one costs its
// timeout, then the next answers.
func TestSTUNFallsThroughSilentServer(t *testing.T) {
	silent, good := startSTUN(t), startSTUN(t)
	silent.mu.Lock()
	silent.silent = true
	silent.mu.Unlock()
	c := listen4(t)
	start := time.Now()
	r, err := Discover(context.Background(), c, []string{silent.addr(), good.addr()}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Server != good.addr() || time.Since(start) < 200*time.Millisecond {
		t.Errorf("server %s after %s", r.Server, time.Since(start))
	}
	silent.mu.Lock()
	n := silent.requests
	silent.mu.Unlock()
	if n != 1 {
		t.Errorf("silent server got %d requests, want 1 (no retransmit)", n)
	}
	if _, err := Discover(context.Background(), c, []string{silent.addr()}, 100*time.Millisecond); !errors.Is(err, ErrSTUN) {
		t.Errorf("all-silent: %v", err)
	}
}

func TestParseBindingResponse(t *testing.T) {
	req, _ := BindingRequest()
	ok, _ := stun.Build(stun.NewTransactionIDSetter(req.TransactionID), stun.BindingSuccess,
		stun.XORMappedAddress{IP: net.IPv4(198, 51, 100, 7), Port: 40001})
	got, err := ParseBindingResponse(ok.Raw, req.TransactionID)
	if err != nil || got.String() != "198.51.100.7:40001" {
		t.Fatalf("%s %v", got, err)
	}
	if _, err := ParseBindingResponse(ok.Raw, [12]byte{1}); !errors.Is(err, ErrSTUN) {
		t.Error("foreign transaction accepted")
	}
	noAttr, _ := stun.Build(stun.NewTransactionIDSetter(req.TransactionID), stun.BindingSuccess)
	if _, err := ParseBindingResponse(noAttr.Raw, req.TransactionID); !errors.Is(err, ErrSTUN) {
		t.Error("response without an address accepted")
	}
	if _, err := ParseBindingResponse(ok.Raw[:19], req.TransactionID); !errors.Is(err, ErrSTUN) {
		t.Error("truncated response accepted")
	}
	for _, s := range []string{"stun:[2001:db8::10]:3478", "host:1", "stun:stun.l.google.com:19302"} {
		if _, _, err := ParseSTUNServer(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"stun:host", "host:0", ":3478"} {
		if _, _, err := ParseSTUNServer(s); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}
