package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strconv"
	"time"
)

// ClientTimeout is the client's per-operation I/O timeout, as upstream
// fipsctl's socket read/write timeouts.
const ClientTimeout = 5 * time.Second

// maxResponseSize bounds a response line the client will buffer.
const maxResponseSize = 64 << 20

// DefaultControlPort is the Windows control socket's TCP port on
// 127.0.0.1 (the gateway's is 21211).
const DefaultControlPort = 21210

// ParsePort reads a Windows control "socket path" (a port number). ok is
// false when s is not one, and port is then DefaultControlPort, which is
// what upstream falls back to (after a warning).
func ParsePort(s string) (port uint16, ok bool) {
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return DefaultControlPort, false
	}
	return uint16(p), true
}

// ServerError is an error response from the server; Message is its
// "message" ("unknown error" when the response had none).
type ServerError struct{ Message string }

func (e *ServerError) Error() string { return e.Message }

// ConnectError is a failure to reach the control socket at all.
type ConnectError struct {
	Addr string // the socket path, or 127.0.0.1:port
	Err  error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("cannot connect to %s: %s", e.Addr, osErrorText(e.Err))
}

func (e *ConnectError) Unwrap() error { return e.Err }

// PermissionDenied reports whether the socket exists but this user may not
// connect to it (not in group fips, or the group not yet picked up).
func (e *ConnectError) PermissionDenied() bool { return errors.Is(e.Err, fs.ErrPermission) }

// Hint is upstream fipsctl's advice for this failure.
func (e *ConnectError) Hint() string {
	if e.PermissionDenied() {
		return "Hint: add your user to the 'fips' group: sudo usermod -aG fips $USER. " +
			"Then log out and back in for the change to take effect."
	}
	return "Is the FIPS daemon running?"
}

// Call sends one request to the control socket at socketPath (on Windows:
// a port on 127.0.0.1; empty means [DefaultSocketPath]) and returns the
// response's data. params is marshalled as the request's "params" (a
// json.RawMessage is sent as is; nil sends none).
//
// Errors: *ConnectError when the socket cannot be reached, *ServerError
// when the server answered with an error, otherwise an error worded as
// upstream fipsctl words it ("failed to send request: …", "no response
// from daemon", "failed to read response: …", "invalid response JSON: …"),
// or ctx's error once ctx is done. A response with no "data" (which
// upstream never sends) yields the whole response object.
func Call(ctx context.Context, socketPath, command string, params any) (json.RawMessage, error) {
	req := Request{Command: command}
	if params != nil {
		if raw, ok := params.(json.RawMessage); ok {
			req.Params = raw
		} else {
			b, err := json.Marshal(params)
			if err != nil {
				return nil, fmt.Errorf("encoding params: %w", err)
			}
			req.Params = b
		}
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	line = append(line, '\n')

	if socketPath == "" {
		socketPath = DefaultSocketPath()
	}
	c, err := dial(ctx, socketPath)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	resp, err := exchange(c, line)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return resp, err
}

func exchange(c net.Conn, line []byte) (json.RawMessage, error) {
	c.SetWriteDeadline(time.Now().Add(ClientTimeout))
	_, werr := c.Write(line)
	if werr == nil {
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}
	got, err := readResponseLine(c)
	if werr != nil && (err != nil || len(got) == 0) {
		// The server may have answered (and closed) before reading the
		// request, as when refusing a connection; that answer wins.
		return nil, fmt.Errorf("failed to send request: %s", osErrorText(werr))
	}
	if err != nil {
		return nil, err
	}
	if len(got) == 0 {
		return nil, errors.New("no response from daemon")
	}
	var resp struct {
		Status  string          `json:"status"`
		Data    json.RawMessage `json:"data"`
		Message *string         `json:"message"`
	}
	if err := json.Unmarshal(got, &resp); err != nil {
		return nil, fmt.Errorf("invalid response JSON: %v", err)
	}
	if resp.Status == StatusError {
		msg := "unknown error"
		if resp.Message != nil {
			msg = *resp.Message
		}
		return nil, &ServerError{Message: msg}
	}
	if resp.Data == nil {
		return json.RawMessage(got), nil
	}
	return resp.Data, nil
}

// readResponseLine reads the first line (without its line ending), each
// read bounded by ClientTimeout as upstream's socket read timeout is.
func readResponseLine(c net.Conn) ([]byte, error) {
	var buf []byte
	chunk := make([]byte, 32<<10)
	for {
		c.SetReadDeadline(time.Now().Add(ClientTimeout))
		n, err := c.Read(chunk)
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			buf = append(buf, chunk[:i]...)
			return bytes.TrimSuffix(buf, []byte{'\r'}), nil
		}
		buf = append(buf, chunk[:n]...)
		if len(buf) > maxResponseSize {
			return nil, errors.New("failed to read response: response too large")
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read response: %s", osErrorText(err))
		}
	}
}
