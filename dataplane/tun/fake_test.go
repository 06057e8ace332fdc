package tun

import (
	"bytes"
	"errors"
	"os"
	"sync"

	wgtun "golang.zx2c4.com/wireguard/tun"
)

// fakeTUN is a wireguard/tun device whose reads are scripted and whose
// writes are recorded.
type fakeTUN struct {
	batch  int
	reads  chan fakeRead
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	writes   [][][]byte // each Write's packets (copies) when record is set
	record   bool
	writeErr error
	written  int
}

// fakeRead is what one Read returns.
type fakeRead struct {
	pkts [][]byte
	err  error
}

func newFakeTUN(batch int) *fakeTUN {
	return &fakeTUN{batch: batch, reads: make(chan fakeRead), closed: make(chan struct{}), record: true}
}

func (d *fakeTUN) File() *os.File             { return nil }
func (d *fakeTUN) MTU() (int, error)          { return 1280, nil }
func (d *fakeTUN) Name() (string, error)      { return "fake0", nil }
func (d *fakeTUN) Events() <-chan wgtun.Event { return nil }
func (d *fakeTUN) BatchSize() int             { return d.batch }

func (d *fakeTUN) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

func (d *fakeTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	select {
	case r := <-d.reads:
		if len(r.pkts) > len(bufs) {
			return 0, errors.New("fake: more packets than buffers")
		}
		for i, p := range r.pkts {
			sizes[i] = copy(bufs[i][offset:], p)
		}
		return len(r.pkts), r.err
	case <-d.closed:
		return 0, os.ErrClosed
	}
}

func (d *fakeTUN) Write(bufs [][]byte, offset int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.writeErr != nil {
		return 0, d.writeErr
	}
	d.written += len(bufs)
	if d.record {
		var w [][]byte
		for _, b := range bufs {
			w = append(w, bytes.Clone(b[offset:]))
		}
		d.writes = append(d.writes, w)
	}
	return len(bufs), nil
}
