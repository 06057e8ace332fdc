package node

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	wgtun "golang.zx2c4.com/wireguard/tun"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/dataplane"
	"github.com/fips-go/fips/dataplane/tun"
)

// scriptedTUN is a wireguard/tun device whose reads come from a channel
// and whose writes are recorded.
type scriptedTUN struct {
	reads  chan []byte
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	writes [][]byte
}

func (d *scriptedTUN) File() *os.File             { return nil }
func (d *scriptedTUN) MTU() (int, error)          { return 1280, nil }
func (d *scriptedTUN) Name() (string, error)      { return "fake0", nil }
func (d *scriptedTUN) Events() <-chan wgtun.Event { return nil }
func (d *scriptedTUN) BatchSize() int             { return 1 }
func (d *scriptedTUN) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}
func (d *scriptedTUN) Read(bufs [][]byte, sizes []int, off int) (int, error) {
	select {
	case p := <-d.reads:
		sizes[0] = copy(bufs[0][off:], p)
		return 1, nil
	case <-d.closed:
		return 0, os.ErrClosed
	}
}
func (d *scriptedTUN) Write(bufs [][]byte, off int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range bufs {
		d.writes = append(d.writes, bytes.Clone(b[off:]))
	}
	return len(bufs), nil
}

// The node's side of the adapter: a packet read without a published
// session goes to the loop's queue, a copy with its read time; a read
// that finds the queue full once the loop has stopped is counted as
// dropped; the loop's writes reach
// the device at its flush; closing the device ends the reader and its
// dataplane worker.
func TestTUNPacketsReachTheLoopAndTheDevice(t *testing.T) {
	defer goleak.VerifyNone(t)
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Options{Identity: id, QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	dev := &scriptedTUN{reads: make(chan []byte), closed: make(chan struct{})}
	td, err := dataplane.OpenTUN(dataplane.TUNConfig{MTU: 1280, Open: dataplane.TUNOpenerFunc(func(tun.Config) (*tun.Device, error) {
		return tun.NewDevice(dev, "fake0", 7, nil), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.runTUN(td); err != nil {
		t.Fatal(err)
	}
	n.tun = td
	pkt := make([]byte, 60)
	pkt[0] = 0x60
	copy(pkt[24:40], identity.NodeAddr{1, 2, 3}.IPv6().AsSlice())
	before := time.Now().UnixNano()
	dev.reads <- pkt
	select {
	case p := <-n.tunIn:
		if !bytes.Equal(p.Pkt, pkt) || p.Read < before {
			t.Fatalf("queued %d bytes read at %d (sent at %d)", len(p.Pkt), p.Read, before)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the packet did not reach the loop's queue")
	}
	if n.eng != nil && n.eng.Workers() != 1 {
		t.Errorf("%d dataplane workers, want the reader's", n.eng.Workers())
	}

	n.core.v6.write(pkt)
	if len(dev.writes) != 0 {
		t.Fatal("written before the loop's flush")
	}
	n.flushTUN()
	if len(dev.writes) != 1 || !bytes.Equal(dev.writes[0], pkt) {
		t.Fatalf("device writes: %d", len(dev.writes))
	}

	// A fills the queue; B, read after the loop stopped, finds it full.
	dev.reads <- pkt
	dev.reads <- pkt
	close(n.stopped)
	dev.Close()
	n.bg.Wait()
	if got := n.tunDrops.Load(); got != 1 || len(n.tunIn) != 1 {
		t.Errorf("%d reads dropped after the loop stopped, %d queued; want 1 and 1", got, len(n.tunIn))
	}
	if n.eng != nil && n.eng.Workers() != 0 {
		t.Errorf("%d dataplane workers after the device closed", n.eng.Workers())
	}
}
