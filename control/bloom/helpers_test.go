package bloom

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// addr is a deterministic, well-spread NodeAddr.
func addr(i int) identity.NodeAddr {
	var x [32]byte
	binary.LittleEndian.PutUint64(x[:], uint64(i)+0x5eed)
	return identity.NodeAddrFromXOnly(x)
}

// filterOf is the default filter holding exactly addrs.
func filterOf(addrs ...identity.NodeAddr) Filter {
	f := NewFilter()
	for _, a := range addrs {
		f.Insert(a)
	}
	return f
}

// announce encodes a FilterAnnounce link message.
func announce(t testing.TB, seq uint64, f Filter) []byte {
	t.Helper()
	return announceK(t, seq, f.HashCount(), f.Bytes())
}

func announceK(t testing.TB, seq uint64, k uint8, bits []byte) []byte {
	t.Helper()
	fa := wire.FilterAnnounce{Sequence: seq, HashCount: k, SizeClass: SizeClassV1, Filter: bits}
	b := make([]byte, fa.Len())
	if _, err := fa.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// allOnes is the poison filter seen in the wild.
func allOnes() []byte {
	b := make([]byte, FilterBytes)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

type sentMsg struct {
	to  identity.NodeAddr
	seq uint64
	f   Filter
}

// fakeEnv records sends and answers IsTreePeer from a set.
type fakeEnv struct {
	tree map[identity.NodeAddr]bool
	fail map[identity.NodeAddr]bool
	sent []sentMsg
}

func newFakeEnv(tree ...identity.NodeAddr) *fakeEnv {
	e := &fakeEnv{tree: map[identity.NodeAddr]bool{}, fail: map[identity.NodeAddr]bool{}}
	for _, a := range tree {
		e.tree[a] = true
	}
	return e
}

var errFakeSend = errors.New("fake send failure")

func (e *fakeEnv) SendFilterAnnounce(peer identity.NodeAddr, msg []byte) error {
	if e.fail[peer] {
		return errFakeSend
	}
	fa, err := wire.ParseFilterAnnounce(msg)
	if err != nil {
		panic("State sent an undecodable FilterAnnounce: " + err.Error())
	}
	f, err := FilterFromBytes(fa.Filter, fa.HashCount)
	if err != nil {
		panic(err)
	}
	e.sent = append(e.sent, sentMsg{to: peer, seq: fa.Sequence, f: f})
	return nil
}

func (e *fakeEnv) IsTreePeer(peer identity.NodeAddr) bool { return e.tree[peer] }

// take returns and forgets what was sent.
func (e *fakeEnv) take() []sentMsg {
	s := e.sent
	e.sent = nil
	return s
}

// logRecorder is a slog handler that keeps records.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r)
	h.mu.Unlock()
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

func (h *logRecorder) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level == level && r.Message == msg {
			n++
		}
	}
	return n
}
