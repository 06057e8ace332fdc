package rendezvous

import (
	"bytes"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v3"
	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newID(t testing.TB) *identity.Identity {
	t.Helper()
	id, err := identity.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func keysOf(id *identity.Identity) Keys {
	return Keys{SecretHex: id.Secret().Hex(), PublicHex: id.PublicKey().Hex()}
}

func testLog(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// stunResponder answers Binding Requests on loopback. mapped, when set,
// replaces the source address it reports; mappedOnly uses
// MAPPED-ADDRESS instead of XOR-MAPPED-ADDRESS; silent answers nothing.
type stunResponder struct {
	conn       *net.UDPConn
	wg         sync.WaitGroup
	mu         sync.Mutex
	mapped     func(netip.AddrPort) netip.AddrPort
	mappedOnly bool
	silent     bool
	requests   int
	lastRaw    []byte
}

func startSTUN(t testing.TB) *stunResponder {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &stunResponder{conn: c}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			m := &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
			if m.Decode() != nil || m.Type != stun.BindingRequest {
				continue
			}
			r.mu.Lock()
			r.requests++
			r.lastRaw = bytes.Clone(buf[:n])
			silent, mappedOnly, mapped := r.silent, r.mappedOnly, r.mapped
			r.mu.Unlock()
			if silent {
				continue
			}
			rep := from
			if mapped != nil {
				rep = mapped(from)
			}
			var attr stun.Setter = stun.XORMappedAddress{IP: rep.Addr().AsSlice(), Port: int(rep.Port())}
			if mappedOnly {
				attr = &stun.MappedAddress{IP: rep.Addr().AsSlice(), Port: int(rep.Port())}
			}
			resp, err := stun.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.BindingSuccess, attr)
			if err != nil {
				continue
			}
			_, _ = c.WriteToUDPAddrPort(resp.Raw, from)
		}
	}()
	t.Cleanup(func() { c.Close(); r.wg.Wait() })
	return r
}

func (r *stunResponder) addr() string { return "stun:" + r.conn.LocalAddr().String() }

// docToLoopback maps 192.0.2.x:p (what the responder reports for
// 127.0.0.x:p) back to loopback for the punch.
func loopbackToDoc(ap netip.AddrPort) netip.AddrPort {
	b := ap.Addr().As4()
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, b[3]}), ap.Port())
}

func docToLoopback(ap netip.AddrPort) netip.AddrPort {
	b := ap.Addr().As4()
	if b[0] == 192 && b[1] == 0 && b[2] == 2 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, b[3]}), ap.Port())
	}
	return ap
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
