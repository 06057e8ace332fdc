//go:build linux

package node

import (
	"bytes"
	"os"
	"testing"

	"golang.zx2c4.com/wireguard/tun"
)

// recordingTUN is a tun.Device that records each Write's packets.
type recordingTUN struct {
	writes [][][]byte
}

func (d *recordingTUN) File() *os.File                         { return nil }
func (d *recordingTUN) Read([][]byte, []int, int) (int, error) { return 0, os.ErrClosed }
func (d *recordingTUN) MTU() (int, error)                      { return 1280, nil }
func (d *recordingTUN) Name() (string, error)                  { return "rec0", nil }
func (d *recordingTUN) Events() <-chan tun.Event               { return nil }
func (d *recordingTUN) Close() error                           { return nil }
func (d *recordingTUN) BatchSize() int                         { return 1 }
func (d *recordingTUN) Write(bufs [][]byte, offset int) (int, error) {
	var w [][]byte
	for _, b := range bufs {
		w = append(w, bytes.Clone(b[offset:]))
	}
	d.writes = append(d.writes, w)
	return len(bufs), nil
}

func TestTUNBatchWritesWhatWasQueuedInOrder(t *testing.T) {
	dev := &recordingTUN{}
	b := newTUNBatch(dev, 4)
	pkt := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 40+i) }
	if err := b.flush(); err != nil || len(dev.writes) != 0 {
		t.Fatalf("empty flush wrote %d batches (%v)", len(dev.writes), err)
	}
	for i := range 6 {
		if !b.add(pkt(i)) {
			t.Fatalf("add %d refused", i)
		}
	}
	// The fifth packet found the batch full: the first four went out.
	if len(dev.writes) != 1 || len(dev.writes[0]) != 4 {
		t.Fatalf("writes after 6 adds with room for 4: %d", len(dev.writes))
	}
	if err := b.flush(); err != nil {
		t.Fatal(err)
	}
	if len(dev.writes) != 2 || len(dev.writes[1]) != 2 {
		t.Fatalf("second write: %v", len(dev.writes))
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
	if b.add(make([]byte, 65536)) {
		t.Error("a packet over 64 KiB was accepted")
	}
}

func TestIPv6DisabledSysctl(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    bool
	}{{"1\n", true}, {"0\n", false}, {"", false}} {
		p := dir + "/disable_ipv6"
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ipv6Disabled(p); err != nil || got != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.content, got, err, tc.want)
		}
	}
	if _, err := ipv6Disabled(dir + "/missing"); err == nil {
		t.Error("a missing sysctl file read without error")
	}
}
