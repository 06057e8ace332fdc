package ctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzDecodeRequest: the decoder never panics, fails only with a
// RequestError, and what it accepts re-encodes to a request it decodes to
// the same thing.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"command":"show_status"}`, `{"command":"connect","params":{"npub":"n","address":"a","transport":"udp"}}`,
		`{"command":null}`, `{}`, `[]`, `["x",{}]`, `{"command":"a","command":"b"}`, `{"command":"x"} y`,
		``, `"x"`, `{"command":"\ud800"}`, `{"params":null,"command":"x"}`, `[1,2,3]`, `{"a":[{"b":{}}]}`,
		`{"command":"x","params":[1e400,"[[",{"a":-1e99999999999}]}`, `["x",[[[[[[[[0e999]]]]]]]]]`,
		`{"command":"x","params":` + strings.Repeat("[", 130) + strings.Repeat("]", 130) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := DecodeRequest(in)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || re.Msg == "" {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if req.Params != nil && (!json.Valid(req.Params) || string(req.Params) == "null") {
			t.Fatalf("params %q", req.Params)
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeRequest(b)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		if again.Command != req.Command || !jsonEqual(again.Params, req.Params) {
			t.Fatalf("round trip %q %s → %q %s", req.Command, req.Params, again.Command, again.Params)
		}
	})
}

// jsonEqual compares two JSON values semantically (encoding/json may
// re-escape strings when it re-encodes a RawMessage).
func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	decode := func(r json.RawMessage) (any, error) {
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	va, ea := decode(a)
	vb, eb := decode(b)
	return ea == nil && eb == nil && reflect.DeepEqual(va, vb)
}

// FuzzFormatFloat: serde's layout always parses back to the same float
// and is valid JSON.
func FuzzFormatFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 0.1, 1e16, 1e-5, 1e-6, 123.456, 5e-324, 1.7976931348623157e308} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		s := FormatFloat(v)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != v || math.Signbit(back) != math.Signbit(v) || !json.Valid([]byte(s)) {
			t.Fatalf("%v → %s → %v (%v)", v, s, back, err)
		}
	})
}
