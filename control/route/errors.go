package route

import "errors"

// Errors the Router's handlers return, wrapped with detail; test with
// errors.Is. A decode failure also wraps the *wire.DecodeError. None of
// them needs more than a debug log: the counters already record them.
var (
	ErrDecode        = errors.New("route: malformed message")
	ErrTTLExhausted  = errors.New("route: ttl exhausted")
	ErrNoRoute       = errors.New("route: no route to destination")
	ErrMTUExceeded   = errors.New("route: message exceeds the next hop's MTU") // also wraps the *transport.MTUError
	ErrSend          = errors.New("route: send failed")                        // also wraps Links.Send's error
	ErrDuplicate     = errors.New("route: duplicate lookup request")
	ErrLimit         = errors.New("route: table full")
	ErrRateLimited   = errors.New("route: rate limited")
	ErrNoPeers       = errors.New("route: no peer may reach the target")
	ErrForwarded     = errors.New("route: lookup response already forwarded")
	ErrUnknownTarget = errors.New("route: target identity unknown")
	ErrProof         = errors.New("route: lookup proof does not verify")
	ErrSign          = errors.New("route: signing failed")
)
