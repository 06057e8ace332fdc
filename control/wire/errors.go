package wire

import (
	"errors"
	"fmt"
)

// Classes of decode failure. A *DecodeError wraps exactly one of these.
var (
	ErrTruncated      = errors.New("truncated")
	ErrLength         = errors.New("bad length")
	ErrVersion        = errors.New("unsupported version")
	ErrPhase          = errors.New("unknown phase")
	ErrFlags          = errors.New("bad flags")
	ErrType           = errors.New("unknown message type")
	ErrValue          = errors.New("bad field value")
	ErrBufferTooSmall = errors.New("buffer too small")
)

// DecodeError describes why a message could not be decoded.
type DecodeError struct {
	Msg    string // message being decoded, e.g. "FMP msg1"
	Field  string // field at fault, e.g. "payload_len"; may be empty
	Detail string // human-readable detail, e.g. "got 12, want 110"
	Kind   error  // one of the Err* classes above
}

func (e *DecodeError) Error() string {
	s := e.Msg + ": " + e.Kind.Error()
	if e.Field != "" {
		s += " in " + e.Field
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *DecodeError) Unwrap() error { return e.Kind }

func errTruncated(msg, field string, got, want int) error {
	return &DecodeError{Msg: msg, Field: field, Kind: ErrTruncated, Detail: fmt.Sprintf("have %d bytes, need %d", got, want)}
}

func errLength(msg, field string, got, want int) error {
	return &DecodeError{Msg: msg, Field: field, Kind: ErrLength, Detail: fmt.Sprintf("got %d, want %d", got, want)}
}

func errValue(msg, field, detail string) error {
	return &DecodeError{Msg: msg, Field: field, Kind: ErrValue, Detail: detail}
}

func errKind(kind error, msg, field, detail string) error {
	return &DecodeError{Msg: msg, Field: field, Kind: kind, Detail: detail}
}

func errBuffer(msg string, have, need int) error {
	return fmt.Errorf("%s: %w: have %d bytes, need %d", msg, ErrBufferTooSmall, have, need)
}
