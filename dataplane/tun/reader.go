package tun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	wgtun "golang.zx2c4.com/wireguard/tun"
)

// Reader reads a device in batches: on Linux one Read returns the
// segments one offloaded super-packet split into (up to the device's
// BatchSize), elsewhere one packet. Its buffers are allocated once; a
// Reader belongs to the goroutine that runs it.
type Reader struct {
	dev    wgtun.Device
	bufs   [][]byte
	sizes  []int
	packet func(pkt []byte, read int64)
	end    func()
}

// NewReader reads dev, calling packet for each packet read (pkt is
// writable and valid only during the call; read is when its read
// returned, Unix ns) and end, when not nil, after the last packet of
// each read that returned some.
func NewReader(dev wgtun.Device, packet func(pkt []byte, read int64), end func()) *Reader {
	n := max(dev.BatchSize(), 1)
	r := &Reader{dev: dev, bufs: make([][]byte, n), sizes: make([]int, n), packet: packet, end: end}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, Offset+MaxPacket)
	}
	return r
}

// Run reads until the device is closed (then it returns nil) or ctx
// ends: a blocked read ends only with the device, so Run closes the
// device then and returns ctx's error. Any other read error ends it
// too, returned; a read whose super-packet split into more segments
// than the batch holds (wireguard/tun's ErrTooManySegments) loses the
// rest of that super-packet and reading goes on.
func (r *Reader) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = r.dev.Close() })
	defer stop()
	for {
		err := r.read()
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, os.ErrClosed) {
			return nil
		}
		return fmt.Errorf("tun: read: %w", err)
	}
}

// read reads one batch and hands it over.
func (r *Reader) read() error {
	cnt, err := r.dev.Read(r.bufs, r.sizes, Offset)
	read := time.Now().UnixNano()
	for i := range cnt {
		r.packet(r.bufs[i][Offset:Offset+r.sizes[i]], read)
	}
	if cnt > 0 && r.end != nil {
		r.end()
	}
	if errors.Is(err, wgtun.ErrTooManySegments) {
		return nil
	}
	return err
}
