package native

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// FSP port tiers (upstream's port registry).
const (
	// PortProtocolMax is the highest port reserved for protocol use.
	PortProtocolMax = 255
	// PortStandardMax is the highest port reserved for FIPS standard
	// services (256 is the IPv6 shim).
	PortStandardMax = 1023
	// PortEphemeralMin is the lowest port handed out for "any port".
	PortEphemeralMin = 49152
	// PortIPv6Shim is the IPv6 adapter's port, never the native API's.
	PortIPv6Shim = 256
)

// Compiled-in bounds of the local protocol (upstream's).
const (
	// MaxCommand is the longest command line, newline excluded; a longer
	// one ends the connection with nothing written back.
	MaxCommand = 8192
	// MaxInjectRepeat is the largest repeat of the debug inject command.
	MaxInjectRepeat = 64
	// MaxDatagram is the read buffer for a flow's descriptor: above
	// anything the wire carries.
	MaxDatagram = 65535
	// ArrivalAllowance is the send-buffer bytes allowed per unread
	// message on a listener's or flow's socket pair.
	ArrivalAllowance = 4096
)

// Command is one parsed request: Connect, Listen, Stats, Inject or Arrive.
type Command interface{ name() string }

// Connect opens a flow to Peer:Remote from Local (0: an ephemeral port).
type Connect struct {
	Peer   string // npub, decoded by the server
	Remote uint16
	Local  uint16
}

// Listen holds Local (0: an ephemeral port) for arriving flows.
type Listen struct{ Local uint16 }

// Stats (debug) reports what the node received on a flow.
type Stats struct{ Flow uint64 }

// Inject (debug) writes Data Repeat times onto a flow from the node's side.
type Inject struct {
	Flow   uint64
	Data   []byte
	Repeat uint32
}

// Arrive (debug) dispatches Data as though Peer had sent it from Src to Dst.
type Arrive struct {
	Peer     string
	Src, Dst uint16
	Data     []byte
}

func (Connect) name() string { return "connect" }
func (Listen) name() string  { return "listen" }
func (Stats) name() string   { return "stats" }
func (Inject) name() string  { return "inject" }
func (Arrive) name() string  { return "arrive" }

// DebugName is the command's name when it is one of the three debug
// commands (answered only with node.native_api.debug_commands), else "".
func DebugName(c Command) string {
	switch c.(type) {
	case Stats, Inject, Arrive:
		return c.name()
	}
	return ""
}

// Refusals of a command decided from the request alone. Each is wrapped
// in a *CommandError carrying upstream's message.
var (
	ErrBadRequest   = errors.New("invalid request")
	ErrUnknown      = errors.New("unknown command")
	ErrNoParams     = errors.New("command requires params")
	ErrBadParams    = errors.New("invalid params")
	ErrPortProtocol = errors.New("port reserved for protocol use")
	ErrPortStandard = errors.New("port reserved for FIPS standard services")
	ErrBadHex       = errors.New("invalid hex")
	ErrBadRepeat    = errors.New("repeat out of range")
)

// CommandError is a refused command: Kind is one of the Err* sentinels
// (errors.Is matches it), Msg the line upstream sends.
type CommandError struct {
	Kind error
	Msg  string
}

func (e *CommandError) Error() string { return e.Msg }
func (e *CommandError) Unwrap() error { return e.Kind }

// cmdErr is a refusal of kind whose message is upstream's text (format
// may use %w; only kind is matched by errors.Is).
func cmdErr(kind error, format string, a ...any) error {
	return &CommandError{Kind: kind, Msg: fmt.Errorf(format, a...).Error()}
}

// CheckBindable refuses a port in a reserved tier (local or remote).
func CheckBindable(port uint16) error {
	switch {
	case port <= PortProtocolMax:
		return cmdErr(ErrPortProtocol, "port %d is reserved for protocol use", port)
	case port <= PortStandardMax:
		return cmdErr(ErrPortStandard, "port %d is reserved for FIPS standard services", port)
	}
	return nil
}

// Parse decodes one command line (without its newline) into a Command,
// refusing what a client may not ask for. Port policy is applied here,
// before any node state is touched.
func Parse(line []byte) (Command, error) {
	var req struct {
		Command *string         `json:"command"`
		Params  json.RawMessage `json:"params"`
	}
	if err := strictObject(line, map[string]any{"command": &req.Command, "params": &req.Params}); err != nil {
		return nil, cmdErr(ErrBadRequest, "invalid request: %v", err)
	}
	if req.Command == nil {
		return nil, cmdErr(ErrBadRequest, "invalid request: missing field `command`")
	}
	cmd := *req.Command
	var p params
	switch cmd {
	case "connect", "listen", "stats", "inject", "arrive":
		if len(req.Params) == 0 || bytes.Equal(bytes.TrimSpace(req.Params), []byte("null")) {
			return nil, cmdErr(ErrNoParams, "command '%s' requires params", cmd)
		}
		var err error
		if p, err = decodeParams(req.Params); err != nil {
			return nil, cmdErr(ErrBadParams, "invalid params for '%s': %v", cmd, err)
		}
	default:
		return nil, cmdErr(ErrUnknown, "unknown command '%s'", cmd)
	}
	bad := func(err error) error { return cmdErr(ErrBadParams, "invalid params for '%s': %v", cmd, err) }
	switch cmd {
	case "connect":
		peer, err := p.str("peer")
		if err != nil {
			return nil, bad(err)
		}
		remote, err := p.u16("remote_port", false)
		if err != nil {
			return nil, bad(err)
		}
		local, err := p.u16("local_port", true)
		if err != nil {
			return nil, bad(err)
		}
		if err := CheckBindable(remote); err != nil {
			return nil, err
		}
		if local != 0 {
			if err := CheckBindable(local); err != nil {
				return nil, err
			}
		}
		return Connect{Peer: peer, Remote: remote, Local: local}, nil
	case "listen":
		local, err := p.u16("local_port", true)
		if err != nil {
			return nil, bad(err)
		}
		if local != 0 {
			if err := CheckBindable(local); err != nil {
				return nil, err
			}
		}
		return Listen{Local: local}, nil
	case "stats":
		flow, err := p.u64("flow_id")
		if err != nil {
			return nil, bad(err)
		}
		return Stats{Flow: flow}, nil
	case "arrive":
		peer, err := p.str("peer")
		if err != nil {
			return nil, bad(err)
		}
		src, err := p.u16("src_port", false)
		if err != nil {
			return nil, bad(err)
		}
		dst, err := p.u16("dst_port", false)
		if err != nil {
			return nil, bad(err)
		}
		data, err := p.hexField("data")
		if err != nil {
			return nil, err
		}
		return Arrive{Peer: peer, Src: src, Dst: dst, Data: data}, nil
	default: // inject
		flow, err := p.u64("flow_id")
		if err != nil {
			return nil, bad(err)
		}
		if _, err := p.str("data"); err != nil {
			return nil, bad(err)
		}
		repeat := uint64(1)
		if raw, ok := p["repeat"]; ok {
			if repeat, err = uintOf(raw, 32); err != nil {
				return nil, bad(fmt.Errorf("repeat: %w", err))
			}
		}
		if repeat == 0 || repeat > MaxInjectRepeat {
			return nil, cmdErr(ErrBadRepeat, "repeat must be between 1 and %d, got %d", MaxInjectRepeat, repeat)
		}
		data, err := p.hexField("data")
		if err != nil {
			return nil, err
		}
		return Inject{Flow: flow, Data: data, Repeat: uint32(repeat)}, nil
	}
}

// params is a command's params object, keys matched exactly (serde's
// rule, not encoding/json's case-folding).
type params map[string]json.RawMessage

func decodeParams(raw json.RawMessage) (params, error) {
	var p params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("expected an object: %w", err)
	}
	if p == nil {
		return nil, errors.New("expected an object")
	}
	return p, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (p params) str(key string) (string, error) {
	raw, ok := p[key]
	if !ok {
		return "", fmt.Errorf("missing field `%s`", key)
	}
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s: expected a string", key)
	}
	return s, nil
}

// u16 reads a port; optional ones may be absent or null (0 then).
func (p params) u16(key string, optional bool) (uint16, error) {
	raw, ok := p[key]
	if !ok || isNull(raw) {
		if optional {
			return 0, nil
		}
		return 0, fmt.Errorf("missing field `%s`", key)
	}
	v, err := uintOf(raw, 16)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return uint16(v), nil
}

func (p params) u64(key string) (uint64, error) {
	raw, ok := p[key]
	if !ok {
		return 0, fmt.Errorf("missing field `%s`", key)
	}
	v, err := uintOf(raw, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return v, nil
}

func (p params) hexField(key string) ([]byte, error) {
	s, _ := p.str(key) // checked by the caller
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, cmdErr(ErrBadHex, "invalid hex in '%s': %v", key, err)
	}
	return b, nil
}

// uintOf reads a JSON integer literal of at most bits bits: no sign, no
// fraction, no exponent (serde_json's rule for an unsigned field).
func uintOf(raw json.RawMessage, bits int) (uint64, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("expected u%d, got %s", bits, clip(s))
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("expected u%d, got %s", bits, clip(s))
	}
	return v, nil
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// strictObject decodes a top-level JSON object, storing the named fields
// into targets (keys matched exactly) and ignoring the others.
func strictObject(line []byte, targets map[string]any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("expected an object")
	}
	for k, dst := range targets {
		raw, ok := m[k]
		if !ok {
			continue
		}
		switch d := dst.(type) {
		case *json.RawMessage:
			*d = raw
		case **string:
			if isNull(raw) {
				continue
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("%s: expected a string", k)
			}
			*d = &s
		}
	}
	return nil
}

// Errno is the errno name a refused command reports in data.errno (names,
// not numbers: the number belongs to the client's platform).
func Errno(err error) string {
	switch {
	case errors.Is(err, ErrPortProtocol), errors.Is(err, ErrPortStandard),
		errors.Is(err, ErrNoPort):
		return "EADDRNOTAVAIL"
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrUnknown), errors.Is(err, ErrNoParams),
		errors.Is(err, ErrBadParams), errors.Is(err, ErrBadHex), errors.Is(err, ErrBadRepeat),
		errors.Is(err, ErrBadPeer):
		return "EINVAL"
	case errors.Is(err, ErrPortTaken), errors.Is(err, ErrFlowTaken):
		return "EADDRINUSE"
	case errors.Is(err, ErrTooManyFlows), errors.Is(err, ErrClientLimit), errors.Is(err, ErrSocketPair):
		return "EMFILE"
	case errors.Is(err, ErrNoFlow):
		return "ENOENT"
	case errors.Is(err, ErrIO):
		return "EIO"
	}
	return "ECONNREFUSED" // shutting down, debug disabled, backlog, no pending
}

// Reply is one reply line: upstream's control Response (data and message
// omitted when empty).
type Reply struct {
	Status  string `json:"status"`
	Data    any    `json:"data,omitempty"`
	Message string `json:"message,omitempty"`
}

// OK is a success reply.
func OK(data any) Reply { return Reply{Status: "ok", Data: data} }

// Deny is a refusal carrying its errno name.
func Deny(err error) Reply {
	return Reply{Status: "error", Data: errnoData{Errno: Errno(err)}, Message: err.Error()}
}

type errnoData struct {
	Errno string `json:"errno"`
}

// Line is the reply's JSON line, newline included.
func (r Reply) Line() []byte {
	b, err := json.Marshal(r)
	if err != nil { // unreachable: every Data is a plain struct
		b = []byte(`{"status":"error","data":{"errno":"EIO"},"message":"reply encoding failed"}`)
	}
	return append(b, '\n')
}

// ConnectReply is connect's data (keys in serde_json's sorted order).
type ConnectReply struct {
	FlowID     uint64 `json:"flow_id"`
	LocalPort  uint16 `json:"local_port"`
	MaxPayload uint16 `json:"max_payload"`
	Node       string `json:"node"`
	Peer       string `json:"peer"`
	RemotePort uint16 `json:"remote_port"`
}

// ListenReply is listen's data.
type ListenReply struct {
	Backlog   uint   `json:"backlog"`
	LocalPort uint16 `json:"local_port"`
	Node      string `json:"node"`
}

// ArrivalMessage is the one message a listener's descriptor carries per
// arriving flow (no newline; the flow's descriptor rides with it). Held
// is how many datagrams are already queued on that descriptor.
type ArrivalMessage struct {
	FlowID     uint64 `json:"flow_id"`
	Held       int    `json:"held"`
	LocalPort  uint16 `json:"local_port"`
	MaxPayload uint16 `json:"max_payload"`
	Node       string `json:"node"`
	Peer       string `json:"peer"`
	RemotePort uint16 `json:"remote_port"`
}

// StatsReply is the debug stats command's data.
type StatsReply struct {
	Closed      bool   `json:"closed"`
	FlowID      uint64 `json:"flow_id"`
	LocalPort   uint16 `json:"local_port"`
	RxBytes     uint64 `json:"rx_bytes"`
	RxDatagrams uint64 `json:"rx_datagrams"`
}

// InjectReply is the debug inject command's data.
type InjectReply struct {
	Bytes     uint64 `json:"bytes"`
	Datagrams uint32 `json:"datagrams"`
	FlowID    uint64 `json:"flow_id"`
}

// ArriveReply is the debug arrive command's data: outcome delivered,
// announced, held or "dropped: <cause>"; flow_id null unless announced or
// held.
type ArriveReply struct {
	FlowID  *uint64 `json:"flow_id"`
	Outcome string  `json:"outcome"`
}
