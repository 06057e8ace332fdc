package afxdp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by Receive once Close was called.
var ErrClosed = errors.New("afxdp: socket closed")

// Socket is one AF_XDP socket bound to an interface queue, with its own
// UMEM, fill, completion and RX rings. Receive belongs to one goroutine;
// Statistics and Close may be called from any.
type Socket struct {
	fd int
	// file wraps fd in Go's network poller: Receive parks its goroutine
	// there instead of blocking a thread in poll(2), so a reader that
	// waits costs no thread hand-off; Close wakes it by a deadline.
	file           *os.File
	raw            syscall.RawConn
	umem           []byte
	shared         *UMEM // nil: umem is the socket's own
	frameSize      uint64
	fill, comp, rx ring
	zeroCopy       bool
	wakeup         bool

	received atomic.Uint64
	wakeups  atomic.Uint64

	// busyPoll is Options.BusyPoll; kernelBusy that the kernel took
	// SO_PREFER_BUSY_POLL and SO_BUSY_POLL, so a recvfrom on the empty
	// ring runs the queue's NAPI here.
	busyPoll            time.Duration
	kernelBusy          bool
	busyPolls, busyHits atomic.Uint64

	// The transmit half (Options.TxFrames > 0): TX ring, completion
	// ring and the pool of TX frames, guarded by txMu; taken once per
	// TxQueue refill and once per TxQueue flush, never per frame.
	txMu     sync.Mutex
	tx       ring
	txPool   []uint64 // free TX frame addresses
	txFrames int
	txBase   uint64 // first TX frame's address (after the fill frames)
	txCounts txCounts

	closeOnce sync.Once
	closed    atomic.Bool
	mu        sync.Mutex // guards fd against Close while Statistics reads
}

// ring is one mapped ring: producer and consumer indices, flags, and its
// descriptors (u64 addresses for fill/completion, xdp_desc for RX).
type ring struct {
	mem      []byte
	producer *uint32
	consumer *uint32
	flags    *uint32
	descs    unsafe.Pointer
	mask     uint32
	size     uint32
}

func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}

func mapRing(fd int, off unix.XDPRingOffset, pgoff int64, n uint32, descSize uintptr) (ring, error) {
	length := int(off.Desc) + int(n)*int(descSize)
	mem, err := unix.Mmap(fd, pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, err
	}
	base := unsafe.Pointer(&mem[0])
	return ring{
		mem:      mem,
		producer: (*uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*uint32)(unsafe.Add(base, off.Flags)),
		descs:    unsafe.Add(base, off.Desc),
		mask:     n - 1,
		size:     n,
	}, nil
}

func setsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), size, 0); e != 0 {
		return e
	}
	return nil
}

func getsockopt(fd, opt int, p unsafe.Pointer, size uintptr) (uintptr, error) {
	l := uint32(size)
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return 0, e
	}
	return uintptr(l), nil
}

// Open makes the UMEM and rings, fills the fill ring with every frame and
// binds to o.Queue of o.Ifindex with need_wakeup: zero-copy first when
// o.ZeroCopy, else (or when refused) copy mode. The socket receives
// nothing until its fd is put in an XSKMAP the XDP program redirects to.
func Open(o Options) (*Socket, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, errorf("socket: %w", err)
	}
	s := &Socket{fd: fd, frameSize: uint64(o.FrameSize), busyPoll: o.BusyPoll}
	fail := func(err error) (*Socket, error) {
		s.release()
		return nil, err
	}
	if o.BusyPoll > 0 {
		// Refused (an old kernel, no CAP_NET_ADMIN for the budget): the
		// spin on the ring alone stands.
		us := int(o.BusyPoll / time.Microsecond)
		s.kernelBusy = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL, 1) == nil &&
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, max(us, 1)) == nil &&
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL_BUDGET, busyPollBudget) == nil
	}
	// Non-blocking, so that os.NewFile registers it with the poller
	// (the AF_XDP socket signals readiness when its RX ring has frames).
	// The ring calls take MSG_DONTWAIT explicitly, so the flag changes
	// nothing else.
	if err := unix.SetNonblock(fd, true); err != nil {
		return fail(errorf("set non-blocking: %w", err))
	}
	s.file = os.NewFile(uintptr(fd), "xsk")
	if s.raw, err = s.file.SyscallConn(); err != nil {
		return fail(errorf("poller: %w", err))
	}
	n := uint32(o.Frames)
	// base is the first of this socket's frames in the UMEM: 0 in its
	// own, its share's start in a shared one.
	var base uint64
	var owner *Socket
	if u := o.UMEM; u != nil {
		if u.frameSize != s.frameSize {
			return fail(errorf("shared UMEM of %d-byte frames, socket wants %d", u.frameSize, s.frameSize))
		}
		if base, err = u.take(o.Frames + o.TxFrames); err != nil {
			return fail(err)
		}
		s.umem, s.shared, owner = u.mem, u, u.owner
	} else {
		s.umem, err = unix.Mmap(-1, 0, (o.Frames+o.TxFrames)*o.FrameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			return fail(errorf("UMEM mmap: %w", err))
		}
	}
	s.txFrames, s.txBase = o.TxFrames, base+uint64(o.Frames)*uint64(o.FrameSize)
	if owner == nil {
		// The UMEM is registered once, on its first socket; the others
		// bind with XDP_SHARED_UMEM naming that socket, each with fill
		// and completion rings of its own (another device or queue).
		reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(len(s.umem)), Size: uint32(o.FrameSize)}
		if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
			return fail(errorf("XDP_UMEM_REG: %w", err))
		}
	}
	// The completion ring holds every TX frame at once; the kernel wants
	// one even without a TX ring.
	comp := max(o.Frames, o.TxFrames)
	for _, r := range []struct{ opt, n int }{{unix.XDP_UMEM_FILL_RING, o.Frames},
		{unix.XDP_UMEM_COMPLETION_RING, comp}, {unix.XDP_RX_RING, o.Frames}, {unix.XDP_TX_RING, o.TxFrames}} {
		if r.n == 0 {
			continue
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, r.opt, r.n); err != nil {
			return fail(errorf("ring size option %d: %w", r.opt, err))
		}
	}
	var off unix.XDPMmapOffsets
	if _, err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return fail(errorf("XDP_MMAP_OFFSETS: %w", err))
	}
	if s.fill, err = mapRing(fd, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, n, 8); err != nil {
		return fail(errorf("map fill ring: %w", err))
	}
	if s.comp, err = mapRing(fd, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, uint32(comp), 8); err != nil {
		return fail(errorf("map completion ring: %w", err))
	}
	if s.rx, err = mapRing(fd, off.Rx, unix.XDP_PGOFF_RX_RING, n, unsafe.Sizeof(unix.XDPDesc{})); err != nil {
		return fail(errorf("map RX ring: %w", err))
	}
	if o.TxFrames > 0 {
		if s.tx, err = mapRing(fd, off.Tx, unix.XDP_PGOFF_TX_RING, uint32(o.TxFrames), unsafe.Sizeof(unix.XDPDesc{})); err != nil {
			return fail(errorf("map TX ring: %w", err))
		}
		s.txPool = make([]uint64, 0, o.TxFrames)
		for i := o.TxFrames - 1; i >= 0; i-- {
			s.txPool = append(s.txPool, s.txBase+uint64(i)*s.frameSize)
		}
		// Copy mode sends at most a budget of frames per sendto (32 by
		// default); a larger one, where the kernel has the option
		// (6.17+), saves syscalls. Refused: the default stands.
		_ = unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, maxTxBudget)
	}
	// Every fill frame goes to the kernel: the fill ring is as large as
	// the receive part of the UMEM.
	for i := uint32(0); i < n; i++ {
		*s.fill.addr(i) = base + uint64(i)*s.frameSize
	}
	atomic.StoreUint32(s.fill.producer, n)

	if owner != nil {
		// A sharing socket inherits the owner's mode and need_wakeup
		// (the kernel refuses flags beside XDP_SHARED_UMEM).
		sa := &unix.SockaddrXDP{Flags: unix.XDP_SHARED_UMEM, Ifindex: uint32(o.Ifindex), QueueID: uint32(o.Queue), SharedUmemFD: uint32(owner.fd)}
		if err := unix.Bind(fd, sa); err != nil {
			return fail(errorf("bind to ifindex %d queue %d sharing the UMEM of socket %d: %w", o.Ifindex, o.Queue, owner.fd, err))
		}
		s.zeroCopy, s.wakeup = owner.zeroCopy, owner.wakeup
		o.UMEM.sockets++
		return s, nil
	}
	var modes []uint16
	if o.ZeroCopy {
		modes = append(modes, unix.XDP_ZEROCOPY)
	}
	modes = append(modes, unix.XDP_COPY)
	var errs []error
	for _, m := range modes {
		sa := &unix.SockaddrXDP{Flags: m | unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(o.Ifindex), QueueID: uint32(o.Queue)}
		if err := unix.Bind(fd, sa); err != nil {
			errs = append(errs, fmt.Errorf("mode %#x: %w", m, err))
			continue
		}
		s.zeroCopy, s.wakeup = m == unix.XDP_ZEROCOPY, true
		if o.UMEM != nil {
			o.UMEM.owner = s
			o.UMEM.sockets++
		}
		return s, nil
	}
	return fail(errorf("bind to ifindex %d queue %d: %w", o.Ifindex, o.Queue, errors.Join(errs...)))
}

// FD is the socket's descriptor, for the XSKMAP.
func (s *Socket) FD() int { return s.fd }

// Receive waits until the RX ring holds frames (or Close), calls fn with
// each frame (valid only during the call: its UMEM frame goes back to the
// fill ring right after) and returns how many it handled. It waits in
// Go's network poller: the goroutine parks, no thread blocks.
func (s *Socket) Receive(fn func(frame []byte)) (int, error) {
	for {
		if s.closed.Load() {
			return 0, ErrClosed
		}
		prod := atomic.LoadUint32(s.rx.producer)
		cons := atomic.LoadUint32(s.rx.consumer)
		if n := prod - cons; n > 0 {
			return s.drain(cons, n, fn), nil
		}
		s.kick()
		if s.busyPoll > 0 && s.spin() {
			continue
		}
		err := s.raw.Read(func(uintptr) bool {
			// Done once the ring has frames or the socket closes; else
			// the poller parks the goroutine until the socket is
			// readable (edge-triggered: the kernel wakes it at every
			// RX flush).
			return s.closed.Load() || atomic.LoadUint32(s.rx.producer) != atomic.LoadUint32(s.rx.consumer)
		})
		if err != nil && !s.closed.Load() {
			return 0, errorf("wait: %w", err)
		}
	}
}

// spin polls the empty RX ring for up to busyPoll before Receive parks:
// at a high packet rate the next frames come sooner than a park and a
// wake-up cost. With the kernel's busy polling on, each round is a
// recvfrom that runs the queue's NAPI in this thread. It reports whether
// frames came (or the socket closed).
func (s *Socket) spin() bool {
	s.busyPolls.Add(1)
	deadline := time.Now().Add(s.busyPoll)
	for {
		if s.kernelBusy {
			_, _, _ = unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		}
		if atomic.LoadUint32(s.rx.producer) != atomic.LoadUint32(s.rx.consumer) {
			s.busyHits.Add(1)
			return true
		}
		if s.closed.Load() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		runtime.Gosched()
	}
}

func (s *Socket) drain(cons, n uint32, fn func([]byte)) int {
	fprod := atomic.LoadUint32(s.fill.producer)
	for i := uint32(0); i < n; i++ {
		d := s.rx.desc(cons + i)
		if d.Addr+uint64(d.Len) <= uint64(len(s.umem)) {
			fn(s.umem[d.Addr : d.Addr+uint64(d.Len) : d.Addr+uint64(d.Len)])
		}
		// The frame back to the kernel (the chunk's start: copy mode
		// delivers at an offset inside it).
		*s.fill.addr(fprod + i) = d.Addr &^ (s.frameSize - 1)
	}
	atomic.StoreUint32(s.rx.consumer, cons+n)
	atomic.StoreUint32(s.fill.producer, fprod+n)
	s.received.Add(uint64(n))
	s.kick()
	return int(n)
}

// kick wakes the kernel when it asked to be told the fill ring has frames.
func (s *Socket) kick() {
	if s.wakeup && atomic.LoadUint32(s.fill.flags)&unix.XDP_RING_NEED_WAKEUP != 0 {
		s.wakeups.Add(1)
		_, _, _ = unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

// Statistics reads XDP_STATISTICS and this socket's own counts.
func (s *Socket) Statistics() (Statistics, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return Statistics{}, ErrClosed
	}
	if s.txFrames > 0 {
		s.txMu.Lock()
		s.reapLocked()
		s.txMu.Unlock()
	}
	var k unix.XDPStatistics
	if _, err := getsockopt(s.fd, unix.XDP_STATISTICS, unsafe.Pointer(&k), unsafe.Sizeof(k)); err != nil {
		return Statistics{}, errorf("XDP_STATISTICS: %w", err)
	}
	return Statistics{RxDropped: k.Rx_dropped, RxInvalidDescs: k.Rx_invalid_descs, TxInvalidDescs: k.Tx_invalid_descs,
		RxRingFull: k.Rx_ring_full, RxFillRingEmpty: k.Rx_fill_ring_empty_descs, TxRingEmpty: k.Tx_ring_empty_descs,
		Received: s.received.Load(), Wakeups: s.wakeups.Load(), ZeroCopy: s.zeroCopy, NeedWakeup: s.wakeup,
		Transmitted: s.txCounts.sent.Load(), TxPoolEmpty: s.txCounts.poolEmpty.Load(), TxKicks: s.txCounts.kicks.Load(),
		TxKickErrors: s.txCounts.kickErrors.Load(), BusyPolls: s.busyPolls.Load(), BusyPollHits: s.busyHits.Load(),
		KernelBusyPoll: s.kernelBusy}, nil
}

// Close wakes a blocked Receive (which returns ErrClosed). The socket and
// its memory are released by the caller of Receive's goroutine through
// Release, once Receive has returned: unmapping under a running Receive
// would fault.
func (s *Socket) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		// Wakes a Receive parked in the poller.
		if s.file != nil {
			_ = s.file.SetReadDeadline(time.Unix(1, 0))
		}
	})
	return nil
}

// Release frees the socket and its memory; call it after Close, once no
// Receive runs.
func (s *Socket) Release() error {
	s.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txMu.Lock()
	defer s.txMu.Unlock()
	return s.release()
}

func (s *Socket) release() error {
	var errs []error
	for _, r := range []*ring{&s.rx, &s.tx, &s.comp, &s.fill} {
		if r.mem != nil {
			errs = append(errs, unix.Munmap(r.mem))
			r.mem = nil
		}
	}
	if s.file != nil {
		// The file owns fd.
		errs = append(errs, s.file.Close())
		s.file, s.fd = nil, -1
	} else if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	if s.umem != nil && s.shared == nil {
		errs = append(errs, unix.Munmap(s.umem))
	}
	s.umem = nil
	return errors.Join(errs...)
}
