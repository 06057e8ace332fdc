package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
)

// Handler answers one command. params is the request's "params" value, nil
// when absent or null. The returned value is marshalled as the response's
// data; a non-nil error becomes an error response whose message is the
// error's text (see [Error]). A handler must return promptly once ctx is
// done: the server stops waiting after its handler timeout, and shutdown
// waits for every handler to return.
type Handler func(ctx context.Context, params json.RawMessage) (any, error)

// Registry maps command names to handlers. It is safe for concurrent use;
// commands may be registered while a server is running.
type Registry struct {
	mu       sync.RWMutex
	handlers map[string]Handler
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{handlers: make(map[string]Handler)} }

// Register installs h under name. It panics on an empty name, a nil handler
// or a name already registered: those are wiring bugs.
func (r *Registry) Register(name string, h Handler) {
	if name == "" || h == nil {
		panic("ctl: Register with empty name or nil handler")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.handlers[name]; dup {
		panic("ctl: command registered twice: " + name)
	}
	r.handlers[name] = h
}

// Lookup returns the handler registered under name.
func (r *Registry) Lookup(name string) (Handler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[name]
	return h, ok
}

// Commands returns the registered command names, sorted.
func (r *Registry) Commands() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.handlers))
	for n := range r.handlers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Dispatch runs the handler for req synchronously and builds the response:
// "unknown command: <name>" when none is registered, the handler's error
// message, or its data. A handler that panics yields "response channel
// closed" (upstream's answer when the main loop drops a request) and the
// panic is logged. Dispatch itself applies no timeout; [Server] does.
func (r *Registry) Dispatch(ctx context.Context, req Request) Response {
	return r.dispatch(ctx, req, slog.Default())
}

func (r *Registry) dispatch(ctx context.Context, req Request, log *slog.Logger) (resp Response) {
	h, ok := r.Lookup(req.Command)
	if !ok {
		return Fail(unknownCommandPrefix + req.Command)
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("control handler panicked", "command", req.Command, "panic", p, "stack", string(debug.Stack()))
			resp = Fail(MsgResponseClosed)
		}
	}()
	data, err := h(ctx, req.Params)
	if err != nil {
		return Fail(errorMessage(ctx, err))
	}
	resp, err = OK(data)
	if err != nil {
		log.Error("control response not encodable", "command", req.Command, "err", err)
		return Fail(fmt.Sprintf("internal error: cannot encode %s response", req.Command))
	}
	return resp
}

// errorMessage is the client-visible text for a handler error.
func errorMessage(ctx context.Context, err error) string {
	var ce *Error
	switch {
	case errors.As(err, &ce):
		return ce.Message
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return MsgQueryTimeout
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return MsgShuttingDown
	}
	return err.Error()
}

// MissingParams is upstream's error for a command that needs params and
// got none: "missing params for <command>".
func MissingParams(command string) error { return Errorf("missing params for %s", command) }

// MissingParam is upstream's error for an absent required parameter:
// "missing '<field>' parameter".
func MissingParam(field string) error { return Errorf("missing '%s' parameter", field) }

// InvalidParam is the error for a parameter present with the wrong JSON
// type or value: "invalid '<field>' parameter: expected <want>, got <what>".
// Upstream reports these as missing too; saying what is wrong is a
// fips-go change (only the message differs).
func InvalidParam(field, want string, raw json.RawMessage) error {
	return Errorf("invalid '%s' parameter: expected %s, got %s", field, want, describeJSON(raw))
}

// describeJSON names a JSON value's type for an error message, quoting a
// short number (a number's text cannot carry anything but digits, signs,
// '.', 'e' and 'E').
func describeJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if len(raw) <= 24 {
		return "the number " + string(raw)
	}
	return "a number"
}

// Params is a request's params object as upstream handlers read it: a
// field that is absent (or null) counts as missing, one present with the
// wrong JSON type is invalid; params that are not an object have no
// fields.
type Params map[string]json.RawMessage

// ParseParams reads raw as an object. Absent, null or non-object params
// give an empty Params, so every field lookup reports it missing.
func ParseParams(raw json.RawMessage) Params {
	var p Params
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
		return Params{}
	}
	return p
}

// RequireParams is ParseParams for commands that need params: absent (or
// null) params give [MissingParams](command).
func RequireParams(command string, raw json.RawMessage) (Params, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, MissingParams(command)
	}
	return ParseParams(raw), nil
}

// present returns the raw field, or false when it is absent or null.
func (p Params) present(name string) (json.RawMessage, bool) {
	raw, ok := p[name]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// String returns the string field name: [MissingParam](name) when absent
// or null, [InvalidParam] when not a string.
func (p Params) String(name string) (string, error) {
	raw, ok := p.present(name)
	if !ok {
		return "", MissingParam(name)
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", InvalidParam(name, "a string", raw)
	}
	return s, nil
}

// OptString returns the string field name and whether it is present as a
// string.
func (p Params) OptString(name string) (string, bool) {
	s, err := p.String(name)
	return s, err == nil
}

// Uint64 returns the field name as a non-negative integer (serde's as_u64:
// 7 is accepted, 7.0 and -1 are not): [MissingParam](name) when absent or
// null, [InvalidParam] otherwise.
func (p Params) Uint64(name string) (uint64, error) {
	raw, ok := p.present(name)
	if !ok {
		return 0, MissingParam(name)
	}
	var n uint64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, InvalidParam(name, "a non-negative integer", raw)
	}
	return n, nil
}

// Has reports whether the field is present (with any value, even null).
func (p Params) Has(name string) bool { _, ok := p[name]; return ok }
