package tun

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	wgtun "golang.zx2c4.com/wireguard/tun"
)

// readerRun is a Reader running in a goroutine, with what it handed over.
type readerRun struct {
	pkts  chan []byte
	ends  chan int // packets seen when End ran
	done  chan error
	reads []int64
}

func startReader(t *testing.T, ctx context.Context, dev *fakeTUN) *readerRun {
	t.Helper()
	rr := &readerRun{pkts: make(chan []byte, 64), ends: make(chan int, 64), done: make(chan error, 1)}
	seen := 0
	r := NewReader(dev, func(p []byte, read int64) {
		if read == 0 {
			t.Error("packet without a read time")
		}
		rr.reads = append(rr.reads, read)
		rr.pkts <- bytes.Clone(p)
		p[0] ^= 0xff // writable
		seen++
	}, func() { rr.ends <- seen })
	go func() { rr.done <- r.Run(ctx) }()
	return rr
}

func (rr *readerRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-rr.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not stop")
		return nil
	}
}

// Every packet of a read reaches the handler in order, then End; a
// super-packet too large for the batch (ErrTooManySegments) does not
// stop the reader; closing the device does, without an error.
func TestReaderHandsOverEachReadThenEnds(t *testing.T) {
	dev := newFakeTUN(4)
	rr := startReader(t, context.Background(), dev)
	dev.reads <- fakeRead{pkts: [][]byte{pkt(0), pkt(1), pkt(2)}}
	for i := range 3 {
		if p := <-rr.pkts; !bytes.Equal(p, pkt(i)) {
			t.Fatalf("packet %d: %d bytes", i, len(p))
		}
	}
	if n := <-rr.ends; n != 3 {
		t.Fatalf("End after %d packets, want 3", n)
	}
	dev.reads <- fakeRead{pkts: [][]byte{pkt(3), pkt(4)}, err: wgtun.ErrTooManySegments}
	<-rr.pkts
	<-rr.pkts
	if n := <-rr.ends; n != 5 {
		t.Fatalf("End after %d packets, want 5", n)
	}
	dev.reads <- fakeRead{} // a read that returned nothing: no End
	dev.reads <- fakeRead{pkts: [][]byte{pkt(5)}}
	if p := <-rr.pkts; !bytes.Equal(p, pkt(5)) {
		t.Fatal("the read after ErrTooManySegments was lost")
	}
	if n := <-rr.ends; n != 6 {
		t.Fatalf("End after %d packets, want 6", n)
	}
	dev.Close()
	if err := rr.wait(t); err != nil {
		t.Fatalf("closed device: %v", err)
	}
	if rr.reads[0] != rr.reads[1] || rr.reads[1] != rr.reads[2] || rr.reads[3] < rr.reads[2] {
		t.Errorf("read times: %v", rr.reads)
	}
	if len(rr.ends) != 0 {
		t.Error("End ran for a read without packets")
	}
}

// Cancelling the context closes the device, which ends a blocked read.
func TestReaderStopsWithItsContext(t *testing.T) {
	dev := newFakeTUN(1)
	ctx, cancel := context.WithCancel(context.Background())
	rr := startReader(t, ctx, dev)
	dev.reads <- fakeRead{pkts: [][]byte{pkt(0)}}
	<-rr.pkts
	cancel()
	if err := rr.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
	select {
	case <-dev.closed:
	default:
		t.Fatal("the device is still open")
	}
}

// A read error other than a closed device ends the reader with it.
func TestReaderReturnsReadErrors(t *testing.T) {
	dev := newFakeTUN(1)
	rr := startReader(t, context.Background(), dev)
	bad := errors.New("device vanished")
	dev.reads <- fakeRead{pkts: [][]byte{pkt(0)}, err: bad}
	if p := <-rr.pkts; !bytes.Equal(p, pkt(0)) {
		t.Fatal("the packets of the failed read were lost")
	}
	if err := rr.wait(t); !errors.Is(err, bad) {
		t.Fatalf("Run: %v, want %v", err, bad)
	}
}

func TestReaderAllocatesNothingPerRead(t *testing.T) {
	dev := newFakeTUN(8)
	var got int
	r := NewReader(dev, func(p []byte, _ int64) { got += len(p) }, func() {})
	batch := fakeRead{pkts: [][]byte{pkt(0), pkt(1), pkt(2), pkt(3), pkt(4), pkt(5), pkt(6), pkt(7)}}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case dev.reads <- batch:
			case <-stop:
				return
			}
		}
	}()
	if a := testing.AllocsPerRun(100, func() {
		if err := r.read(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("%.1f allocations per read of 8 packets", a)
	}
	if got == 0 {
		t.Fatal("nothing was read")
	}
}
