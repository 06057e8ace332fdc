package ctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MaxRequestSize is the largest request line the server accepts, counting
// the terminating newline (upstream's MAX_REQUEST_SIZE).
const MaxRequestSize = 4096

// Client-visible error messages the server itself produces. Handlers
// produce their own (see [MissingParams], [MissingParam]).
const (
	MsgEmptyRequest       = "empty request"
	MsgRequestTooLarge    = "read error: request too large"
	MsgReadTimeout        = "read timeout"
	MsgQueryTimeout       = "query timeout"
	MsgShuttingDown       = "node shutting down"
	MsgResponseClosed     = "response channel closed"
	MsgTooManyConnections = "too many connections"
	invalidRequestPrefix  = "invalid request: "
	readErrorPrefix       = "read error: "
	unknownCommandPrefix  = "unknown command: "
	invalidUTF8Detail     = "stream did not contain valid UTF-8"
)

// Status values of a [Response].
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Request is one control request: {"command": "...", "params": {...}}.
// Params is nil when the request carried none (or carried null).
type Request struct {
	Command string          `json:"command"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is one control response. On the wire an "ok" response always
// carries data (null when Data is nil) and never a message; an "error"
// response always carries a message and never data, exactly as upstream's
// serde encoding does.
type Response struct {
	Status  string          `json:"status"`
	Data    json.RawMessage `json:"data,omitempty"`
	Message string          `json:"message,omitempty"`
}

// OK returns a success response whose data is v marshalled to JSON with
// every object's keys sorted, as upstream's serde_json Values are (their
// maps are BTreeMaps), whatever the field order of v's types.
func OK(v any) (Response, error) {
	b, err := marshal(v)
	if err != nil {
		return Response{}, err
	}
	b, err = Canonical(b)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: StatusOK, Data: b}, nil
}

// Fail returns an error response carrying msg.
func Fail(msg string) Response { return Response{Status: StatusError, Message: msg} }

// MarshalJSON encodes the response in upstream's shape: status first, then
// data (ok) or message (error). Call it directly for upstream's exact
// bytes: json.Marshal re-escapes '<', '>' and '&' in its output.
func (r Response) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"status":`)
	writeJSONString(&b, r.Status)
	switch {
	case r.Status == StatusError:
		b.WriteString(`,"message":`)
		writeJSONString(&b, r.Message)
	default:
		if r.Data != nil || r.Status == StatusOK {
			b.WriteString(`,"data":`)
			if r.Data == nil {
				b.WriteString("null")
			} else {
				if !json.Valid(r.Data) {
					return nil, errors.New("ctl: response data is not valid JSON")
				}
				b.Write(r.Data)
			}
		}
		if r.Message != "" {
			b.WriteString(`,"message":`)
			writeJSONString(&b, r.Message)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Error is a handler failure whose Message the client sees verbatim. Any
// other error a handler returns is shown by its Error() text as well; Error
// exists so a handler can wrap a cause for logs while pinning the exact
// client-visible wording, and so callers can tell protocol-level messages
// apart with errors.As.
type Error struct {
	Message string
	Err     error // optional cause, not shown to the client
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error whose message is formatted as fmt.Sprintf does.
func Errorf(format string, a ...any) error {
	return &Error{Message: fmt.Sprintf(format, a...)}
}

// ErrShuttingDown is what a handler returns when the node is stopping and
// cannot answer; the client sees "node shutting down".
var ErrShuttingDown = &Error{Message: MsgShuttingDown}

// RequestError is why a request line could not be decoded. Its text
// follows serde_json's wording for the common cases (empty input, missing
// or duplicate "command", wrong types, trailing characters); the server
// prefixes it with "invalid request: ".
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

func reqErrf(format string, a ...any) error { return &RequestError{Msg: fmt.Sprintf(format, a...)} }

// DecodeRequest decodes one request. line is the request without its
// surrounding whitespace (the server trims it, as upstream does). Unknown
// top-level fields are ignored, field names match case-sensitively, a
// duplicated field is an error, params nested 128 deep (serde_json's
// recursion limit) or holding a number beyond f64 are an error, and — like serde's derived decoder — the
// sequence form ["command", params] is accepted too.
func DecodeRequest(line []byte) (Request, error) {
	if len(bytes.TrimLeft(line, " \t\r\n")) == 0 {
		return Request{}, reqErrf("EOF while parsing a value at line 1 column %d", len(line))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return Request{}, syntaxError(err, line)
	}
	var req Request
	switch tok {
	case json.Delim('{'):
		req, err = decodeRequestObject(dec, line)
	case json.Delim('['):
		req, err = decodeRequestSeq(dec, line)
	default:
		// A scalar: Token already consumed it whole.
		return Request{}, reqErrf("invalid type: %s, expected struct Request at line 1 column %d",
			describeToken(tok), dec.InputOffset())
	}
	if err != nil {
		return Request{}, err
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(line[end:], " \t\r\n"); len(rest) > 0 {
		return Request{}, reqErrf("trailing characters at line 1 column %d", len(line)-len(rest)+1)
	}
	return req, nil
}

func decodeRequestObject(dec *json.Decoder, line []byte) (Request, error) {
	var req Request
	var haveCmd, haveParams bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Request{}, syntaxError(err, line)
		}
		key, _ := tok.(string)
		switch key {
		case "command", "params":
			if (key == "command" && haveCmd) || (key == "params" && haveParams) {
				return Request{}, reqErrf("duplicate field `%s` at line 1 column %d", key, dec.InputOffset())
			}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Request{}, syntaxError(err, line)
		}
		switch key {
		case "command":
			haveCmd = true
			cmd, err := commandString(raw, dec.InputOffset())
			if err != nil {
				return Request{}, err
			}
			req.Command = cmd
		case "params":
			if err := checkParams(raw, dec.InputOffset()); err != nil {
				return Request{}, err
			}
			haveParams = true
			req.Params = paramsValue(raw)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Request{}, syntaxError(err, line)
	}
	if !haveCmd {
		return Request{}, reqErrf("missing field `command` at line 1 column %d", dec.InputOffset())
	}
	return req, nil
}

// decodeRequestSeq accepts serde's positional form of a struct:
// ["command"] or ["command", params].
func decodeRequestSeq(dec *json.Decoder, line []byte) (Request, error) {
	var req Request
	n := 0
	for dec.More() {
		if n == 2 {
			return Request{}, reqErrf("trailing characters at line 1 column %d", dec.InputOffset()+1)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Request{}, syntaxError(err, line)
		}
		if n == 0 {
			cmd, err := commandString(raw, dec.InputOffset())
			if err != nil {
				return Request{}, err
			}
			req.Command = cmd
		} else {
			if err := checkParams(raw, dec.InputOffset()); err != nil {
				return Request{}, err
			}
			req.Params = paramsValue(raw)
		}
		n++
	}
	if _, err := dec.Token(); err != nil {
		return Request{}, syntaxError(err, line)
	}
	if n == 0 {
		return Request{}, reqErrf("invalid length 0, expected struct Request with 2 elements at line 1 column %d", dec.InputOffset())
	}
	return req, nil
}

// commandString reads the command value; end is the input offset just
// past it.
func commandString(raw json.RawMessage, end int64) (string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
	}
	// serde reports a scalar at its end and a container at its start.
	col := end
	if len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
		col = end - int64(len(raw))
	}
	return "", reqErrf("invalid type: %s, expected a string at line 1 column %d", describeRaw(raw), col)
}

// maxDepth is serde_json's recursion limit: the 128th container open at
// once (the request itself counting as the first) is refused.
const maxDepth = 128

// checkParams refuses what serde_json refuses in a params value that Go's
// decoder takes as text: nesting as deep as its recursion limit, and a
// number beyond f64. The message and column are serde_json's (the
// offending bracket; where its number parser gave up). end is the input
// offset just past raw, which sits one level inside the request.
func checkParams(raw json.RawMessage, end int64) error {
	base := end - int64(len(raw)) // line offset of raw[0]
	depth, inString, escaped := 1, false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth >= maxDepth {
				return reqErrf("recursion limit exceeded at line 1 column %d", base+int64(i)+1)
			}
		case c == ']' || c == '}':
			depth--
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(raw) && strings.IndexByte("+-0123456789.eE", raw[j]) >= 0 {
				j++
			}
			if col, bad := numberOutOfRange(string(raw[i:j])); bad {
				return reqErrf("number out of range at line 1 column %d", base+int64(i+col))
			}
			i = j - 1
		}
	}
	return nil
}

// numberOutOfRange reports whether serde_json refuses the JSON number s
// as out of range, and after how many of its bytes it gives up: at the
// exponent digit that overflows an i32 (for a non-zero significand and a
// positive exponent), else past the number when its value is infinite.
func numberOutOfRange(s string) (int, bool) {
	mant, exp, hasExp := s, "", false
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		mant, exp, hasExp = s[:k], s[k+1:], true
	}
	if hasExp && strings.Trim(mant, "-0.") != "" {
		digits := strings.TrimLeft(exp, "+-")
		if !strings.HasPrefix(exp, "-") {
			var e int64
			for k := 0; k < len(digits); k++ {
				if e = e*10 + int64(digits[k]-'0'); e > math.MaxInt32 {
					return len(s) - len(digits) + k + 1, true
				}
			}
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return len(s), math.IsInf(f, 0)
}

func paramsValue(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return append(json.RawMessage(nil), raw...)
}

// describeRaw names a JSON value the way serde's Unexpected does.
func describeRaw(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "unit"
	}
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean `" + string(raw) + "`"
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return "string " + strconv.Quote(s)
	case '[':
		return "sequence"
	case '{':
		return "map"
	}
	if bytes.ContainsAny(raw, ".eE") {
		f, _ := strconv.ParseFloat(string(raw), 64)
		return "floating point `" + FormatFloat(f) + "`"
	}
	return "integer `" + string(raw) + "`"
}

func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean `" + strconv.FormatBool(t) + "`"
	case string:
		return "string " + strconv.Quote(t)
	case json.Number:
		return describeRaw(json.RawMessage(t))
	}
	return fmt.Sprint(tok)
}

// syntaxError renders a decoder failure with serde_json's position suffix.
func syntaxError(err error, line []byte) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return reqErrf("%s at line 1 column %d", se.Error(), se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return reqErrf("EOF while parsing an object at line 1 column %d", len(line))
	}
	return &RequestError{Msg: err.Error()}
}

// marshal is json.Marshal without HTML escaping ('<' stays '<', as serde
// writes it).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// writeJSONString writes s as a JSON string with serde_json's escaping:
// only '"', '\\' and control characters are escaped.
func writeJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	s = strings.ToValidUTF8(s, "\uFFFD")
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
