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
