package afxdp

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

type txCounts struct {
	sent, poolEmpty, kicks, kickErrors atomic.Uint64
}

// txRefill is how many TX frames a TxQueue takes from the socket's pool
// at once.
const txRefill = 64

// TxQueue is one goroutine's transmit queue on a Socket: it takes TX
// frames from the socket's pool in bulk and submits what it filled in
// bulk, so the socket's lock is taken per batch, not per frame. Several
// goroutines may each hold a TxQueue on one socket; a TxQueue itself is
// not safe for concurrent use.
type TxQueue struct {
	s       *Socket
	cache   []uint64
	pending []unix.XDPDesc
}

// NewTxQueue is a transmit queue on s; nil when s has no TX ring.
func (s *Socket) NewTxQueue() *TxQueue {
	if s.txFrames == 0 {
		return nil
	}
	return &TxQueue{s: s, cache: make([]uint64, 0, txRefill), pending: make([]unix.XDPDesc, 0, s.txFrames)}
}

// Frame is a free TX frame: its address and its whole buffer (FrameSize
// bytes), to be filled and handed to Submit before the next Flush. ok is
// false when every TX frame is in flight (counted as TxPoolEmpty): the
// caller sends another way.
func (q *TxQueue) Frame() (addr uint64, buf []byte, ok bool) {
	if len(q.cache) == 0 && !q.refill() {
		q.s.txCounts.poolEmpty.Add(1)
		return 0, nil, false
	}
	addr = q.cache[len(q.cache)-1]
	q.cache = q.cache[:len(q.cache)-1]
	return addr, q.s.umem[addr : addr+q.s.frameSize : addr+q.s.frameSize], true
}

// Submit queues frame addr's first n bytes for transmission at Flush.
func (q *TxQueue) Submit(addr uint64, n int) {
	q.pending = append(q.pending, unix.XDPDesc{Addr: addr, Len: uint32(n)})
}

// Unused gives back a frame taken by Frame and not submitted.
func (q *TxQueue) Unused(addr uint64) { q.cache = append(q.cache, addr) }

// refill takes up to txRefill frames from the pool, reaping completions
// first.
func (q *TxQueue) refill() bool {
	s := q.s
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.reapLocked()
	k := min(txRefill, len(s.txPool))
	q.cache = append(q.cache, s.txPool[len(s.txPool)-k:]...)
	s.txPool = s.txPool[:len(s.txPool)-k]
	return k > 0
}

// reapLocked moves completed TX frames back to the pool.
func (s *Socket) reapLocked() {
	prod := atomic.LoadUint32(s.comp.producer)
	cons := atomic.LoadUint32(s.comp.consumer)
	for i := cons; i != prod; i++ {
		s.txPool = append(s.txPool, *s.comp.addr(i))
	}
	if n := prod - cons; n > 0 {
		atomic.StoreUint32(s.comp.consumer, prod)
		s.txCounts.sent.Add(uint64(n))
	}
}

// Flush puts the submitted frames on the TX ring and drives the kernel
// to send them; it returns how many were queued. Frames left in the
// queue's cache stay there for the next batch. The ring holds every TX
// frame, so what was submitted always fits.
func (q *TxQueue) Flush() int {
	n := len(q.pending)
	if n == 0 {
		return 0
	}
	s := q.s
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if s.closed.Load() {
		// The memory is about to go: the frames are simply forgotten.
		q.pending = q.pending[:0]
		return 0
	}
	prod := atomic.LoadUint32(s.tx.producer)
	for i, d := range q.pending {
		*s.tx.desc(prod + uint32(i)) = d
	}
	atomic.StoreUint32(s.tx.producer, prod+uint32(n))
	q.pending = q.pending[:0]
	s.kickTxLocked()
	s.reapLocked()
	return n
}

// kickTxLocked makes the kernel consume the TX ring: copy mode sends only
// inside sendto, a budget of frames per call, so it is called until the
// ring is empty or the device pushes back; zero-copy only when the driver
// asked for a wakeup.
func (s *Socket) kickTxLocked() {
	for tries := 0; tries < 64; tries++ {
		if s.zeroCopy && atomic.LoadUint32(s.tx.flags)&unix.XDP_RING_NEED_WAKEUP == 0 {
			return
		}
		if atomic.LoadUint32(s.tx.consumer) == atomic.LoadUint32(s.tx.producer) && tries > 0 {
			return
		}
		s.txCounts.kicks.Add(1)
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0:
			if atomic.LoadUint32(s.tx.consumer) == atomic.LoadUint32(s.tx.producer) {
				return
			}
		case errors.Is(e, unix.EAGAIN):
			// The budget ran out with frames left: call again.
		case errors.Is(e, unix.ENOBUFS), errors.Is(e, unix.EBUSY):
			// The device queue is full: try again (bounded); what is left
			// leaves at the next flush.
		default:
			s.txCounts.kickErrors.Add(1)
			return
		}
	}
}
