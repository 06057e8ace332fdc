//go:build !(linux || darwin || freebsd)

package native

import (
	"errors"
	"log/slog"
)

// Supported reports whether this platform builds the API server: not on
// Windows, which cannot pass a descriptor to another process (upstream
// excludes it for the same reason).
const Supported = false

// ErrUnsupported is Bind's answer on this platform.
var ErrUnsupported = errors.New("the native datagram API needs SCM_RIGHTS, which this platform lacks")

// Server is not built on this platform.
type Server struct{}

// Bind always fails here.
func Bind(Config, Host, *slog.Logger) (*Server, error) { return nil, ErrUnsupported }

// Serve returns at once.
func (*Server) Serve() error { return ErrUnsupported }

// Close does nothing.
func (*Server) Close() error { return nil }

// Path is empty.
func (*Server) Path() string { return "" }

// Refused is 0.
func (*Server) Refused() uint64 { return 0 }

// Evicted is 0.
func (*Server) Evicted() uint64 { return 0 }
