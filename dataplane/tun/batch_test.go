package tun

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

func pkt(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 40+i) }

func TestBatchWritesWhatWasQueuedInOrder(t *testing.T) {
	dev := newFakeTUN(1)
	b := NewBatch(dev, 4)
	if err := b.Flush(); err != nil || len(dev.writes) != 0 {
		t.Fatalf("empty flush wrote %d batches (%v)", len(dev.writes), err)
	}
	for i := range 6 {
		if !b.Add(pkt(i)) {
			t.Fatalf("add %d refused", i)
		}
	}
	// The fifth packet found the batch full: the first four went out.
	if len(dev.writes) != 1 || len(dev.writes[0]) != 4 {
		t.Fatalf("writes after 6 adds with room for 4: %d", len(dev.writes))
	}
	if b.Len() != 2 {
		t.Fatalf("held after the first write: %d, want 2", b.Len())
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(dev.writes) != 2 || len(dev.writes[1]) != 2 || b.Len() != 0 {
		t.Fatalf("second write: %d writes, %d held", len(dev.writes), b.Len())
	}
	i := 0
	for _, w := range dev.writes {
		for _, p := range w {
			if !bytes.Equal(p, pkt(i)) {
				t.Fatalf("packet %d: % x", i, p[:4])
			}
			i++
		}
	}
	if b.Add(make([]byte, MaxPacket+1)) {
		t.Error("a packet over 64 KiB was accepted")
	}
	if !b.Add(make([]byte, MaxPacket)) {
		t.Error("a 64 KiB packet was refused")
	}
}

// Packets built in place (Reserve, Commit) leave in order with their
// committed length, a full batch written first.
func TestBatchReserveCommit(t *testing.T) {
	dev := newFakeTUN(1)
	b := NewBatch(dev, 2)
	for i := range 5 {
		buf := b.Reserve()
		if len(buf) != MaxPacket {
			t.Fatalf("reserved %d bytes, want %d", len(buf), MaxPacket)
		}
		n := copy(buf, pkt(i))
		if !b.Commit(n) {
			t.Fatalf("commit %d refused", i)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(dev.writes) != 3 {
		t.Fatalf("%d writes for 5 packets in batches of 2, want 3", len(dev.writes))
	}
	i := 0
	for _, w := range dev.writes {
		for _, p := range w {
			if !bytes.Equal(p, pkt(i)) {
				t.Fatalf("packet %d: %d bytes", i, len(p))
			}
			i++
		}
	}
}

// A failed write is reported by the Add or Commit it made room for, and
// by Flush, once each.
func TestBatchReportsFailedWrites(t *testing.T) {
	dev := newFakeTUN(1)
	b := NewBatch(dev, 1)
	if !b.Add(pkt(0)) {
		t.Fatal("first add refused")
	}
	dev.writeErr = errors.New("device gone")
	if b.Add(pkt(1)) {
		t.Error("an add whose write failed reported success")
	}
	b.Reserve()
	if b.Commit(10) {
		t.Error("a commit whose write failed reported success")
	}
	if err := b.Flush(); !errors.Is(err, dev.writeErr) {
		t.Errorf("flush: %v", err)
	}
	dev.writeErr = nil
	b.Reserve()
	if !b.Commit(10) {
		t.Error("the failure stuck to the next commit")
	}
}

// Batches of different goroutines share one device.
func TestBatchesWriteOneDeviceConcurrently(t *testing.T) {
	dev := newFakeTUN(1)
	dev.record = false
	const writers, each = 4, 1000
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			b := NewBatch(dev, 8)
			for i := range each {
				buf := b.Reserve()
				buf[0] = byte(i)
				b.Commit(40)
			}
			if err := b.Flush(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if dev.written != writers*each {
		t.Fatalf("%d packets written, want %d", dev.written, writers*each)
	}
}

func TestBatchAllocatesNothing(t *testing.T) {
	dev := newFakeTUN(1)
	dev.record = false
	b := NewBatch(dev, 8)
	p := pkt(3)
	if a := testing.AllocsPerRun(100, func() {
		for range 20 {
			copy(b.Reserve(), p)
			b.Commit(len(p))
			b.Add(p)
		}
		_ = b.Flush()
	}); a != 0 {
		t.Fatalf("%.1f allocations per run of 40 packets", a)
	}
}
