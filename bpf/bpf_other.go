//go:build !linux

package bpf

import "net/netip"

// Objects is the loaded program and its maps; on this OS it cannot exist.
type Objects struct{}

// Load returns ErrNotSupported: XDP needs Linux.
func Load(Options) (*Objects, error) { return nil, ErrNotSupported }

// Attach returns ErrNotSupported.
func (*Objects) Attach(int, AttachMode) (AttachMode, error) { return 0, ErrNotSupported }

// Detach returns ErrNotSupported.
func (*Objects) Detach(int) error { return ErrNotSupported }

// Attachments returns nothing.
func (*Objects) Attachments() []Attachment { return nil }

// ProgramID returns ErrNotSupported.
func (*Objects) ProgramID() (uint32, error) { return 0, ErrNotSupported }

// SetConfig returns ErrNotSupported.
func (*Objects) SetConfig([]uint16, uint32, uint32) error { return ErrNotSupported }

// SetNext returns ErrNotSupported.
func (*Objects) SetNext(bool) error { return ErrNotSupported }

// SetLocalAddrs returns ErrNotSupported.
func (*Objects) SetLocalAddrs([]netip.Addr) error { return ErrNotSupported }

// SetEthernet returns ErrNotSupported.
func (*Objects) SetEthernet(int, uint16) error { return ErrNotSupported }

// AddLink returns ErrNotSupported.
func (*Objects) AddLink(uint32, uint32) error { return ErrNotSupported }

// BindXSK returns ErrNotSupported.
func (*Objects) BindXSK(int, int, uint32, int) error { return ErrNotSupported }

// UnbindXSK returns ErrNotSupported.
func (*Objects) UnbindXSK(int, int, uint32) error { return ErrNotSupported }

// RemoveLink returns ErrNotSupported.
func (*Objects) RemoveLink(uint32) error { return ErrNotSupported }

// Stats returns ErrNotSupported.
func (*Objects) Stats() (Stats, error) { return nil, ErrNotSupported }

// Occupancy returns ErrNotSupported.
func (*Objects) Occupancy() (Occupancy, error) { return Occupancy{}, ErrNotSupported }

// Close does nothing.
func (*Objects) Close() error { return nil }

// TCObjects are the tc programs; on this OS they cannot exist.
type TCObjects struct{}

// LoadTC returns ErrNotSupported.
func LoadTC() (*TCObjects, error) { return nil, ErrNotSupported }

// SetConfig returns ErrNotSupported.
func (*TCObjects) SetConfig([]uint16) error { return ErrNotSupported }

// Attach returns ErrNotSupported.
func (*TCObjects) Attach(int) (TCAttachMode, error) { return 0, ErrNotSupported }

// Detach returns ErrNotSupported.
func (*TCObjects) Detach(int) error { return ErrNotSupported }

// Attachments returns nothing.
func (*TCObjects) Attachments() []TCAttachment { return nil }

// Stats returns ErrNotSupported.
func (*TCObjects) Stats() (TCStats, error) { return nil, ErrNotSupported }

// Close does nothing.
func (*TCObjects) Close() error { return nil }
