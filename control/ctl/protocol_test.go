package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		in, cmd, params string
	}{
		{`{"command": "show_status"}`, "show_status", ""},
		{`{"command":"show_peers","extra":true}`, "show_peers", ""},
		{`{"command":"connect","params":{"npub":"npub1abc","address":"1.2.3.4:2121","transport":"udp"}}`,
			"connect", `{"npub":"npub1abc","address":"1.2.3.4:2121","transport":"udp"}`},
		{`{"params":{"a":1},"command":"x"}`, "x", `{"a":1}`},
		{`{"command":"x","params":null}`, "x", ""},
		{`{"command":"x","params":[1,2]}`, "x", `[1,2]`},
		{`{"command":"","Command":"ignored"}`, "", ""},
		{`{"command":"x","nested":{"command":5,"deep":[{"params":1}]}}`, "x", ""},
		{`["show_status"]`, "show_status", ""},
		{`["connect",{"npub":"n"}]`, "connect", `{"npub":"n"}`},
		{`{"command":"sn\u00f6w"}`, "snöw", ""},
	} {
		req, err := DecodeRequest([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if req.Command != tc.cmd || string(req.Params) != tc.params {
			t.Errorf("%s: got %q %s", tc.in, req.Command, req.Params)
		}
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "EOF while parsing a value at line 1 column 0"},
		{`{"not_command": "foo"}`, "missing field `command` at line 1 column 22"},
		{`{}`, "missing field `command` at line 1 column 2"},
		{`{"COMMAND":"show_status"}`, "missing field `command` at line 1 column 25"},
		{`{"command":5}`, "invalid type: integer `5`, expected a string at line 1 column 12"},
		{`{"command":null}`, "invalid type: null, expected a string at line 1 column 15"},
		{`{"command":1.5}`, "invalid type: floating point `1.5`, expected a string at line 1 column 14"},
		{`{"command":true}`, "invalid type: boolean `true`, expected a string at line 1 column 15"},
		{`{"command":[1]}`, "invalid type: sequence, expected a string at line 1 column 11"},
		{`{"command":{}}`, "invalid type: map, expected a string at line 1 column 11"},
		{`{"command":"a","command":"b"}`, "duplicate field `command` at line 1 column 24"},
		{`{"command":"a","params":1,"params":2}`, "duplicate field `params` at line 1 column 34"},
		{`{"command":"a"} x`, "trailing characters at line 1 column 17"},
		{`{"command":"a"}{}`, "trailing characters at line 1 column 16"},
		{`"show_status"`, `invalid type: string "show_status", expected struct Request at line 1 column 13`},
		{`42`, "invalid type: integer `42`, expected struct Request at line 1 column 2"},
		{`[]`, "invalid length 0, expected struct Request with 2 elements at line 1 column 2"},
		{`[5]`, "invalid type: integer `5`, expected a string at line 1 column 2"},
	} {
		_, err := DecodeRequest([]byte(tc.in))
		var re *RequestError
		if !errors.As(err, &re) || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
	// Malformed JSON: Go's wording, but always a RequestError with a position.
	for _, in := range []string{`nope`, `{"command":}`, `{"command":"x"`, `{"command" "x"}`, `{"command":"x",}`, `[`, `["x",{},3]`} {
		_, err := DecodeRequest([]byte(in))
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "line 1 column") {
			t.Errorf("%s: got %v", in, err)
		}
	}
}

func TestResponseShape(t *testing.T) {
	ok, err := OK(map[string]any{"state": "running"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    Response
		want string
	}{
		{ok, `{"status":"ok","data":{"state":"running"}}`},
		{Response{Status: StatusOK}, `{"status":"ok","data":null}`},
		{Fail("unknown command: foo"), `{"status":"error","message":"unknown command: foo"}`},
		{Fail(""), `{"status":"error","message":""}`},
		{Response{Status: StatusError, Data: json.RawMessage(`{}`), Message: "m"}, `{"status":"error","message":"m"}`},
		{Fail("a\"b\\c\n\x01<>&\u2028é"), `{"status":"error","message":"a\"b\\c\n\u0001<>&` + "\u2028é" + `"}`},
	} {
		b, err := tc.r.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s (%v), want %s", b, err, tc.want)
		}
	}
	if _, err := json.Marshal(Response{Status: StatusOK, Data: json.RawMessage(`{`)}); err == nil {
		t.Error("invalid data marshalled")
	}
	var back Response
	if err := json.Unmarshal([]byte(`{"status":"error","message":"x"}`), &back); err != nil || back.Message != "x" || back.Data != nil {
		t.Errorf("unmarshal: %+v %v", back, err)
	}
}

func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {-3, "-3.0"}, {0.1, "0.1"},
		{0.2, "0.2"}, {123.456, "123.456"}, {1e15, "1000000000000000.0"}, {1e16, "1e16"},
		{1.5e16, "1.5e16"}, {1234567890123456.7, "1234567890123456.8"}, {0.0001, "0.0001"},
		{0.00001, "0.00001"}, {1e-6, "1e-6"}, {1.5e-7, "1.5e-7"}, {2.5e-5, "0.000025"}, {-2.5e-6, "-2.5e-6"}, {0.00012, "0.00012"},
		{1e300, "1e300"}, {math.MaxFloat64, "1.7976931348623157e308"}, {5e-324, "5e-324"},
		{125000, "125000.0"}, {0.05, "0.05"}, {1.0 / 3, "0.3333333333333333"},
	} {
		if got := FormatFloat(tc.f); got != tc.want {
			t.Errorf("%v: got %s want %s", tc.f, got, tc.want)
		}
	}
	b, _ := json.Marshal([]Float{Float(math.NaN()), Float(math.Inf(1)), 2})
	if string(b) != "[null,null,2.0]" {
		t.Errorf("got %s", b)
	}
}

func TestListAndCounts(t *testing.T) {
	var v struct {
		L List[int] `json:"l"`
		C Counts    `json:"c"`
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"l":[],"c":{}}` {
		t.Errorf("got %s", b)
	}
	v.L, v.C = List[int]{1}, Counts{"udp": 2, "tcp": 0}
	b, _ = json.Marshal(v)
	if string(b) != `{"l":[1],"c":{"tcp":0,"udp":2}}` {
		t.Errorf("got %s", b)
	}
}

func TestPretty(t *testing.T) {
	got, err := Pretty([]byte(`{"b":[1,{"y":2.50,"x":-0}],"a":{},"c":[],"d":"<&>\u2028","e":1E2,"f":null,"g":true,"h":18446744073709551616}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n" +
		"  \"a\": {},\n" +
		"  \"b\": [\n" +
		"    1,\n" +
		"    {\n" +
		"      \"x\": -0.0,\n" +
		"      \"y\": 2.5\n" +
		"    }\n" +
		"  ],\n" +
		"  \"c\": [],\n" +
		"  \"d\": \"<&>\u2028\",\n" +
		"  \"e\": 100.0,\n" +
		"  \"f\": null,\n" +
		"  \"g\": true,\n" +
		"  \"h\": 1.8446744073709552e19\n" +
		"}"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := Pretty([]byte(`{`)); err == nil {
		t.Error("accepted bad JSON")
	}
}

func TestDispatch(t *testing.T) {
	reg := NewRegistry()
	reg.Register("echo", func(_ context.Context, p json.RawMessage) (any, error) { return p, nil })
	reg.Register("connect", func(_ context.Context, raw json.RawMessage) (any, error) {
		p, err := RequireParams("connect", raw)
		if err != nil {
			return nil, err
		}
		npub, err := p.String("npub")
		if err != nil {
			return nil, err
		}
		return map[string]string{"npub": npub}, nil
	})
	reg.Register("probe_poll", func(_ context.Context, raw json.RawMessage) (any, error) {
		id, err := ParseParams(raw).Uint64("probe_id")
		if err != nil {
			return nil, err
		}
		return nil, Errorf("unknown probe id: %d", id)
	})
	reg.Register("plain", func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("peer not found: x") })
	reg.Register("wrapped", func(context.Context, json.RawMessage) (any, error) {
		return nil, &Error{Message: "invalid npub 'x': bad", Err: errors.New("checksum")}
	})
	reg.Register("panics", func(context.Context, json.RawMessage) (any, error) { panic("boom") })
	reg.Register("nan", func(context.Context, json.RawMessage) (any, error) { return math.NaN(), nil })
	reg.Register("deadline", func(ctx context.Context, _ json.RawMessage) (any, error) { <-ctx.Done(); return nil, ctx.Err() })

	ctx := context.Background()
	for _, tc := range []struct{ cmd, params, want string }{
		{"nope", "", `{"status":"error","message":"unknown command: nope"}`},
		{"echo", `{"a":1}`, `{"status":"ok","data":{"a":1}}`},
		{"echo", "", `{"status":"ok","data":null}`},
		{"connect", "", `{"status":"error","message":"missing params for connect"}`},
		{"connect", `{}`, `{"status":"error","message":"missing 'npub' parameter"}`},
		{"connect", `[1]`, `{"status":"error","message":"missing 'npub' parameter"}`},
		{"connect", `{"npub":7}`, `{"status":"error","message":"invalid 'npub' parameter: expected a string, got the number 7"}`},
		{"connect", `{"npub":null}`, `{"status":"error","message":"missing 'npub' parameter"}`},
		{"connect", `{"npub":"npub1x","x":0}`, `{"status":"ok","data":{"npub":"npub1x"}}`},
		{"probe_poll", "", `{"status":"error","message":"missing 'probe_id' parameter"}`},
		{"probe_poll", `{}`, `{"status":"error","message":"missing 'probe_id' parameter"}`},
		{"probe_poll", `{"probe_id":null}`, `{"status":"error","message":"missing 'probe_id' parameter"}`},
		{"probe_poll", `{"probe_id":7.0}`, `{"status":"error","message":"invalid 'probe_id' parameter: expected a non-negative integer, got the number 7.0"}`},
		{"probe_poll", `{"probe_id":-1}`, `{"status":"error","message":"invalid 'probe_id' parameter: expected a non-negative integer, got the number -1"}`},
		{"probe_poll", `{"probe_id":"7"}`, `{"status":"error","message":"invalid 'probe_id' parameter: expected a non-negative integer, got a string"}`},
		{"probe_poll", `{"probe_id":18446744073709551616}`, `{"status":"error","message":"invalid 'probe_id' parameter: expected a non-negative integer, got the number 18446744073709551616"}`},
		{"probe_poll", `{"probe_id":7}`, `{"status":"error","message":"unknown probe id: 7"}`},
		{"plain", "", `{"status":"error","message":"peer not found: x"}`},
		{"wrapped", "", `{"status":"error","message":"invalid npub 'x': bad"}`},
		{"panics", "", `{"status":"error","message":"response channel closed"}`},
		{"nan", "", `{"status":"error","message":"internal error: cannot encode nan response"}`},
	} {
		resp := reg.dispatch(ctx, Request{Command: tc.cmd, Params: json.RawMessage(tc.params)}, discardLogger())
		if tc.params == "" {
			resp = reg.dispatch(ctx, Request{Command: tc.cmd}, discardLogger())
		}
		b, _ := json.Marshal(resp)
		if string(b) != tc.want {
			t.Errorf("%s %s: got %s want %s", tc.cmd, tc.params, b, tc.want)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	if r := reg.Dispatch(dctx, Request{Command: "deadline"}); r.Message != MsgQueryTimeout {
		t.Errorf("deadline: %+v", r)
	}
	cctx, cancel2 := context.WithCancel(ctx)
	cancel2()
	if r := reg.Dispatch(cctx, Request{Command: "deadline"}); r.Message != MsgShuttingDown {
		t.Errorf("cancel: %+v", r)
	}
	if got := reg.Commands(); strings.Join(got, ",") != "connect,deadline,echo,nan,panics,plain,probe_poll,wrapped" {
		t.Errorf("commands: %v", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("duplicate registration did not panic")
			}
		}()
		reg.Register("echo", func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	}()
}
