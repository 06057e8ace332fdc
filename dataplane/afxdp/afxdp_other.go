//go:build !linux

package afxdp

// Socket is an AF_XDP socket; on this OS it cannot exist.
type Socket struct{}

// Open returns ErrNotSupported.
func Open(Options) (*Socket, error) { return nil, ErrNotSupported }

// FD returns -1.
func (*Socket) FD() int { return -1 }

// Receive returns ErrNotSupported.
func (*Socket) Receive(func([]byte)) (int, error) { return 0, ErrNotSupported }

// Statistics returns ErrNotSupported.
func (*Socket) Statistics() (Statistics, error) { return Statistics{}, ErrNotSupported }

// Close does nothing.
func (*Socket) Close() error { return nil }

// Release does nothing.
func (*Socket) Release() error { return nil }

// TxQueue is a transmit queue; on this OS it cannot exist.
type TxQueue struct{}

// NewTxQueue returns nil.
func (*Socket) NewTxQueue() *TxQueue { return nil }

// Frame reports no frame.
func (*TxQueue) Frame() (uint64, []byte, bool) { return 0, nil, false }

// Submit does nothing.
func (*TxQueue) Submit(uint64, int) {}

// Unused does nothing.
func (*TxQueue) Unused(uint64) {}

// Flush does nothing.
func (*TxQueue) Flush() int { return 0 }

// UMEM is shared packet memory; on this OS it cannot exist.
type UMEM struct{}

// NewUMEM returns ErrNotSupported.
func NewUMEM(int, int) (*UMEM, error) { return nil, ErrNotSupported }

// Frames returns 0.
func (*UMEM) Frames() int { return 0 }

// Sockets returns 0.
func (*UMEM) Sockets() int { return 0 }

// Close does nothing.
func (*UMEM) Close() error { return nil }
