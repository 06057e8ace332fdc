package afxdp

import (
	"errors"

	"golang.org/x/sys/unix"
)

// UMEM is packet memory several sockets share (XDP_SHARED_UMEM): a
// relay's sockets on all its interfaces and queues register one region
// instead of one each. It is registered on the first socket opened with
// it; each socket takes a contiguous share of its frames (its fill
// frames, then its TX frames), so frames never move between sockets and
// each keeps its own fill, completion, RX and TX rings. Not safe for
// concurrent Open calls; Close it after every socket sharing it is
// released.
type UMEM struct {
	mem       []byte
	frameSize uint64
	frames    int
	next      int // frames handed out
	owner     *Socket
	sockets   int
}

// NewUMEM maps frames frames of frameSize bytes (2048 or 4096).
func NewUMEM(frames, frameSize int) (*UMEM, error) {
	if frameSize != 2048 && frameSize != 4096 {
		return nil, errorf("frame size %d: want 2048 or 4096", frameSize)
	}
	if frames < 16 || frames > 64*maxFrames {
		return nil, errorf("shared UMEM of %d frames: want 16 to %d", frames, 64*maxFrames)
	}
	mem, err := unix.Mmap(-1, 0, frames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, errorf("shared UMEM mmap: %w", err)
	}
	return &UMEM{mem: mem, frameSize: uint64(frameSize), frames: frames}, nil
}

// errUMEMFull: the sockets sharing a UMEM asked for more frames than it has.
var errUMEMFull = errors.New("afxdp: shared UMEM has no frames left")

// take hands out n frames and returns the first one's address.
func (u *UMEM) take(n int) (uint64, error) {
	if u.mem == nil {
		return 0, errorf("shared UMEM is closed")
	}
	if u.next+n > u.frames {
		return 0, errorf("%d frames asked, %d of %d left: %w", n, u.frames-u.next, u.frames, errUMEMFull)
	}
	base := uint64(u.next) * u.frameSize
	u.next += n
	return base, nil
}

// Frames is the UMEM's size in frames.
func (u *UMEM) Frames() int { return u.frames }

// Sockets is how many sockets bound with this UMEM.
func (u *UMEM) Sockets() int { return u.sockets }

// Close unmaps the memory; every socket using it must be released.
func (u *UMEM) Close() error {
	if u.mem == nil {
		return nil
	}
	err := unix.Munmap(u.mem)
	u.mem = nil
	return err
}
