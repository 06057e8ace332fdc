//go:build linux || darwin || freebsd

package native

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// socketPair builds the pair behind a flow or a listener: the node's half
// (non-blocking, under the runtime poller) and the client's half
// (blocking, close-on-exec), sized for budget bytes of unread messages.
func socketPair(budget int) (*PacketConn, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, pairType|pairFlags, 0)
	if err == nil && pairFlags == 0 {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, cmdErr(ErrSocketPair, "%w", err)
	}
	// Linux charges an AF_UNIX message to the sender's SO_SNDBUF, the BSDs
	// to the receiver's SO_RCVBUF: both are sized (best effort).
	_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, budget)
	_ = unix.SetsockoptInt(fds[1], unix.SOL_SOCKET, unix.SO_RCVBUF, budget)
	ours, err := NewPacketConn(fds[0], "native-api-node")
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return ours, os.NewFile(uintptr(fds[1]), "native-api-client"), nil
}

// PacketConn is one half of a flow's or a listener's pair (the node's,
// or the client's in package client): one message per call, an empty
// message told apart from the peer's close.
type PacketConn struct {
	f        *os.File
	rc       syscall.RawConn
	deadline atomic.Pointer[time.Time] // the caller's read deadline
}

// NewPacketConn takes ownership of fd, a SOCK_SEQPACKET (Linux) or
// SOCK_DGRAM (macOS, FreeBSD) socket, and puts it under the runtime
// poller (non-blocking).
func NewPacketConn(fd int, name string) (*PacketConn, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, cmdErr(ErrSocketPair, "%w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, cmdErr(ErrSocketPair, "%w", err)
	}
	return &PacketConn{f: f, rc: rc}, nil
}

// SetReadDeadline bounds Recv (zero: none); an expired one is
// os.ErrDeadlineExceeded.
func (c *PacketConn) SetReadDeadline(t time.Time) error {
	c.deadline.Store(&t)
	return c.f.SetReadDeadline(t)
}

// SetWriteDeadline bounds Send (zero: none).
func (c *PacketConn) SetWriteDeadline(t time.Time) error { return c.f.SetWriteDeadline(t) }

// SyscallConn is the descriptor, for socket options.
func (c *PacketConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// readDeadline is the deadline Recv waits to: the caller's, or sooner
// where a close must be polled for.
func (c *PacketConn) readDeadline() (time.Time, bool) {
	var user time.Time
	if d := c.deadline.Load(); d != nil {
		user = *d
	}
	if closeRetry == 0 {
		return user, false
	}
	probe := time.Now().Add(closeRetry)
	if !user.IsZero() && user.Before(probe) {
		return user, false
	}
	return probe, true
}

// Close closes the node's half; the client then reads end of file.
func (c *PacketConn) Close() error { return c.f.Close() }

// Recv reads one message; io.EOF once the client closed its half. A
// zero-length message is returned as 0, nil (the peer is checked for a
// hang-up, as upstream's recv does, since both read zero bytes).
func (c *PacketConn) Recv(buf []byte) (int, error) {
	for {
		at, probing := c.readDeadline()
		if closeRetry > 0 {
			_ = c.f.SetReadDeadline(at)
		}
		var n int
		var rerr error
		err := c.rc.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), buf, 0)
			if errors.Is(rerr, unix.EAGAIN) {
				return false
			}
			if rerr == nil && n == 0 && hungUp(int(fd)) {
				rerr = io.EOF
			}
			return true
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && probing:
			if c.peerGone() {
				return 0, io.EOF
			}
			continue
		case err != nil:
			return 0, err
		case errors.Is(rerr, unix.ECONNRESET):
			return 0, io.EOF
		case rerr != nil:
			return 0, rerr
		}
		return n, nil
	}
}

// peerGone probes a SOCK_DGRAM pair whose close raised no readiness.
func (c *PacketConn) peerGone() bool {
	gone := false
	_ = c.rc.Control(func(fd uintptr) {
		if hungUp(int(fd)) {
			gone = true
			return
		}
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK)
		gone = errors.Is(err, unix.ECONNRESET)
		if err == nil {
			gone = false
		}
	})
	return gone
}

// readable reports whether a message (or a close) waits to be read.
func (c *PacketConn) readable() bool {
	ready := false
	_ = c.rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		ready = err == nil && n > 0 && p[0].Revents&unix.POLLIN != 0
	})
	return ready
}

func hungUp(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0 && p[0].Revents&unix.POLLHUP != 0
}

// Send writes one message, waiting while the client's buffer is full.
func (c *PacketConn) Send(b []byte) error {
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, sendFlags, nil)
		return !errors.Is(serr, unix.EAGAIN)
	})
	if err != nil {
		return err
	}
	return serr
}

// TrySend writes one message, with a descriptor when rights is set, and
// never waits: a full buffer is EAGAIN.
func (c *PacketConn) TrySend(b []byte, rights *os.File) error {
	var oob []byte
	if rights != nil {
		oob = unix.UnixRights(int(rights.Fd()))
	}
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, sendFlags)
		return true
	})
	if err != nil {
		return err
	}
	return serr
}

// handoffDrop is why a hand-off write failed: a gone listener (EPIPE on
// Linux, ECONNRESET or EDESTADDRREQ on a macOS DGRAM pair) or one that
// stopped reading.
func handoffDrop(err error) DropReason {
	if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EDESTADDRREQ) ||
		errors.Is(err, os.ErrClosed) {
		return DropListenerGone
	}
	return DropListenerNotReading
}

func unixRights(f *os.File) []byte { return unix.UnixRights(int(f.Fd())) }

// isNoBufs: a macOS DGRAM pair reports an unread client as ENOBUFS on the
// send itself; the datagram is dropped and the flow kept.
func isNoBufs(err error) bool { return errors.Is(err, unix.ENOBUFS) }
