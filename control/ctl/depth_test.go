package ctl

import (
	"errors"
	"strings"
	"testing"
)

// serde_json refuses a value nested 128 deep (its recursion limit, the
// request object counting as one level) with "recursion limit exceeded"
// at the column of the offending bracket; upstream answers that as
// "invalid request: …". Values of unknown fields are skipped without a
// limit, as serde skips them.
func TestDecodeRequestRecursionLimit(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct{ in, want string }{
		{`{"command":"x","params":` + nest(126) + `}`, ""},
		{`{"command":"x","params":` + nest(127) + `}`, "recursion limit exceeded at line 1 column 151"},
		{`{"command":"x","params":{"a":` + nest(126) + `}}`, "recursion limit exceeded at line 1 column 155"},
		{`["x",` + nest(126) + `]`, ""},
		{`["x",` + nest(127) + `]`, "recursion limit exceeded at line 1 column 132"},
		{`{"command":"x","deep":` + nest(500) + `}`, ""},
		// An earlier error wins, as serde stops at the first.
		{`{"command":5,"params":` + nest(200) + `}`, "invalid type: integer `5`, expected a string at line 1 column 12"},
	} {
		_, err := DecodeRequest([]byte(tc.in))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%.40s…: %v", tc.in, err)
			}
			continue
		}
		var re *RequestError
		if !errors.As(err, &re) || err.Error() != tc.want {
			t.Errorf("%.40s…: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A number in params beyond f64 is refused as serde_json refuses it:
// "number out of range", at the column where its parser gave up (past the
// number, or at the exponent digit overflowing an i32). Go's decoder
// accepted it as text.
func TestDecodeRequestNumberOutOfRange(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"command":"x","params":1e400}`, "number out of range at line 1 column 29"},
		{`{"command":"x","params":[-1e400]}`, "number out of range at line 1 column 31"},
		{`{"command":"x","params":{"a":1e99999999999}}`, "number out of range at line 1 column 41"},
		{`{"command":"x","params":1` + strings.Repeat("0", 400) + `}`, "number out of range at line 1 column 425"},
		{`{"command":"x","params":[1e308,1e-400,0e99999999999,-0,18446744073709551616]}`, ""},
		{`{"command":"x","params":["1e400"]}`, ""},
		{`{"command":"x","other":1e400}`, ""},
	} {
		_, err := DecodeRequest([]byte(tc.in))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%.50s: %v", tc.in, err)
			}
			continue
		}
		var re *RequestError
		if !errors.As(err, &re) || err.Error() != tc.want {
			t.Errorf("%.50s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}
