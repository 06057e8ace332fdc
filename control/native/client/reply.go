package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"syscall"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/native"
)

// Error is a refusal from the node: Errno is the errno it named (mapped
// onto this platform's number; errors.Is matches it), Message its prose.
type Error struct {
	Op      string
	Errno   syscall.Errno
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("fips native %s: %v", e.Op, e.Errno)
	}
	return fmt.Sprintf("fips native %s: %s (%v)", e.Op, e.Message, e.Errno)
}

func (e *Error) Unwrap() error { return e.Errno }

// ErrProtocol is a reply or arrival this client cannot read: the socket
// is not a native API (or not one speaking this protocol).
var ErrProtocol = errors.New("fips native API protocol error")

var errnos = map[string]syscall.Errno{
	"EADDRINUSE": syscall.EADDRINUSE, "EADDRNOTAVAIL": syscall.EADDRNOTAVAIL,
	"EMFILE": syscall.EMFILE, "EINVAL": syscall.EINVAL, "ECONNREFUSED": syscall.ECONNREFUSED,
	"ENOENT": syscall.ENOENT, "EIO": syscall.EIO, "EPIPE": syscall.EPIPE,
	"EMSGSIZE": syscall.EMSGSIZE, "ETIMEDOUT": syscall.ETIMEDOUT,
}

// decodeReply reads one reply line: the data of a success, an *Error
// carrying the named errno (an unknown or missing name is ECONNREFUSED,
// as upstream's client reads it) for a refusal, ErrProtocol otherwise.
func decodeReply(command string, line []byte) (json.RawMessage, error) {
	var r struct {
		Status  string          `json:"status"`
		Data    json.RawMessage `json:"data"`
		Message string          `json:"message"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("%w: %s reply: %w", ErrProtocol, command, err)
	}
	switch r.Status {
	case "ok":
		return r.Data, nil
	case "error":
		var d struct {
			Errno string `json:"errno"`
		}
		_ = json.Unmarshal(r.Data, &d)
		errno, ok := errnos[d.Errno]
		if !ok {
			errno = syscall.ECONNREFUSED
		}
		return nil, &Error{Op: command, Errno: errno, Message: r.Message}
	}
	return nil, fmt.Errorf("%w: %s reply status %q", ErrProtocol, command, r.Status)
}

// decodeArrival reads a listener's arrival message: the flow's two ends,
// or ErrProtocol.
func decodeArrival(b []byte) (native.ArrivalMessage, Addr, Addr, error) {
	var m native.ArrivalMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return m, Addr{}, Addr{}, fmt.Errorf("%w: arrival: %w", ErrProtocol, err)
	}
	peer, err1 := identity.DecodeNpub(m.Peer)
	node, err2 := identity.DecodeNpub(m.Node)
	if err := errors.Join(err1, err2); err != nil {
		return m, Addr{}, Addr{}, fmt.Errorf("%w: arrival: %w", ErrProtocol, err)
	}
	return m, Addr{node, m.LocalPort}, Addr{peer, m.RemotePort}, nil
}
