package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error classes. Every error the loaders and Validate return is an *Error
// (possibly several, joined with errors.Join) wrapping one of these; test
// with errors.Is, or errors.As for the details.
var (
	ErrRead         = errors.New("cannot read config file")
	ErrSyntax       = errors.New("malformed YAML")
	ErrType         = errors.New("wrong type")
	ErrUnknownKey   = errors.New("unknown key")
	ErrMissingKey   = errors.New("missing key")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrInvalid      = errors.New("invalid configuration")
)

// Error is one problem with a configuration, located as precisely as is
// known.
type Error struct {
	File   string // the file as named to the loader; "" when not from a file
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Key    string // dotted key path, e.g. "peers[0].addresses[1].transport"
	Reason string
	Err    error // one of the Err* classes
}

func (e *Error) Error() string {
	key := e.Key
	if strings.Contains(e.Reason, key) {
		key = "" // upstream's messages name their key themselves
	}
	return location(e.File, e.Line, key) + e.Reason
}

func (e *Error) Unwrap() error { return e.Err }

// Warning is a non-fatal finding: an ignored key, a deprecated spelling, a
// value upstream would accept but that probably does not do what was meant.
type Warning struct {
	File    string
	Line    int
	Key     string
	Message string
}

func (w Warning) String() string { return location(w.File, w.Line, w.Key) + w.Message }

// location renders "file:line: key: ".
func location(file string, line int, key string) string {
	s := ""
	if file != "" {
		s = file
		if line > 0 {
			s += ":" + strconv.Itoa(line)
		}
		s += ": "
	} else if line > 0 {
		s = "line " + strconv.Itoa(line) + ": "
	}
	if key != "" {
		s += key + ": "
	}
	return s
}

// srcPos is where a key was read.
type srcPos struct {
	file string
	line int
}

// invalid builds a validation error located at key (when the loaders saw
// it).
func (c *Config) invalid(key, format string, args ...any) *Error {
	e := &Error{Key: key, Reason: fmt.Sprintf(format, args...), Err: ErrInvalid}
	if p, ok := c.src[key]; ok {
		e.File, e.Line = p.file, p.line
	}
	return e
}

// warn builds a lint warning located at key.
func (c *Config) warn(key, format string, args ...any) Warning {
	w := Warning{Key: key, Message: fmt.Sprintf(format, args...)}
	if p, ok := c.src[key]; ok {
		w.File, w.Line = p.file, p.line
	}
	return w
}
