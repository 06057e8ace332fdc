package afxdp

import "time"

// Options for Open.
type Options struct {
	Ifindex int
	Queue   int
	// Frames is the UMEM's frame count and the size of each ring (a power
	// of two; 0: 2048). FrameSize is each frame's bytes (2048 or 4096;
	// 0: 4096).
	Frames    int
	FrameSize int
	// TxFrames adds a TX ring of that many frames (a power of two, at
	// 0: receive only) and as many UMEM frames for it,
	// apart from the fill ring's.
	TxFrames int
	// UMEM, when set, is shared with the other sockets opened with it
	// (XDP_SHARED_UMEM): this socket takes Frames+TxFrames of its frames
	// and inherits the first socket's mode. nil: a UMEM of its own.
	UMEM *UMEM
	// ZeroCopy asks for zero-copy mode first; copy mode is used when the
	// driver has none (veth) or when false.
	ZeroCopy bool
	// BusyPoll is how long Receive keeps polling an empty RX ring before
	// it parks the goroutine in the network poller (0: at once, at most
	// MaxBusyPoll). The socket also gets SO_PREFER_BUSY_POLL and
	// SO_BUSY_POLL, so each poll may run the queue's NAPI in the caller.
	BusyPoll time.Duration
}

// MaxBusyPoll bounds Options.BusyPoll.
const MaxBusyPoll = time.Millisecond

// Statistics are the kernel's XDP_STATISTICS for one socket plus what
// this package counted.
type Statistics struct {
	RxDropped       uint64 `json:"rx_dropped"`            // frames the kernel dropped for this socket (e.g. too large)
	RxInvalidDescs  uint64 `json:"rx_invalid_descs"`      // bad fill-ring descriptors
	TxInvalidDescs  uint64 `json:"tx_invalid_descs"`      // bad TX descriptors
	RxRingFull      uint64 `json:"rx_ring_full"`          // frames dropped because the RX ring was full
	RxFillRingEmpty uint64 `json:"fill_ring_empty_descs"` // times the fill ring had no frame for the kernel
	TxRingEmpty     uint64 `json:"tx_ring_empty_descs"`
	Received        uint64 `json:"received"`         // frames read from the RX ring
	Wakeups         uint64 `json:"wakeups"`          // need_wakeup kicks of the fill ring
	Transmitted     uint64 `json:"transmitted"`      // frames the kernel completed from the TX ring
	TxPoolEmpty     uint64 `json:"tx_pool_empty"`    // TX frames asked for when none was free (the caller fell back)
	TxKicks         uint64 `json:"tx_kicks"`         // sendto calls that drove the TX ring
	TxKickErrors    uint64 `json:"tx_kick_errors"`   // of which failed other than EAGAIN/ENOBUFS/EBUSY
	BusyPolls       uint64 `json:"busy_polls"`       // empty-ring waits that polled first (dataplane.afxdp_busy_poll_us)
	BusyPollHits    uint64 `json:"busy_poll_hits"`   // of which found frames before parking
	KernelBusyPoll  bool   `json:"kernel_busy_poll"` // SO_PREFER_BUSY_POLL and SO_BUSY_POLL accepted
	ZeroCopy        bool   `json:"zero_copy"`        // bound in zero-copy mode
	NeedWakeup      bool   `json:"need_wakeup"`      // bound with XDP_USE_NEED_WAKEUP
}

const (
	defaultFrames    = 2048
	defaultFrameSize = 4096
	maxFrames        = 1 << 16
	maxTxBudget      = 256
	busyPollBudget   = 64
)

func (o *Options) defaults() error {
	if o.Frames == 0 {
		o.Frames = defaultFrames
	}
	if o.FrameSize == 0 {
		o.FrameSize = defaultFrameSize
	}
	if o.Frames < 16 || o.Frames > maxFrames || o.Frames&(o.Frames-1) != 0 {
		return errorf("frames %d: want a power of two in [16, %d]", o.Frames, maxFrames)
	}
	if o.TxFrames != 0 && (o.TxFrames < 16 || o.TxFrames > maxFrames || o.TxFrames&(o.TxFrames-1) != 0) {
		return errorf("TX frames %d: want 0 or a power of two in [16, %d]", o.TxFrames, maxFrames)
	}
	if o.FrameSize != 2048 && o.FrameSize != 4096 {
		return errorf("frame size %d: want 2048 or 4096", o.FrameSize)
	}
	if o.BusyPoll < 0 || o.BusyPoll > MaxBusyPoll {
		return errorf("busy poll %v: want 0 to %v", o.BusyPoll, MaxBusyPoll)
	}
	if o.Ifindex <= 0 || o.Queue < 0 {
		return errorf("ifindex %d queue %d: out of range", o.Ifindex, o.Queue)
	}
	return nil
}
