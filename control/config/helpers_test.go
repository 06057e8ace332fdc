package config

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// mustLoad parses a YAML string that must load without error.
func mustLoad(t *testing.T, y string) (*Config, []Warning) {
	t.Helper()
	c, w, err := LoadBytes("test.yaml", []byte(y))
	if err != nil {
		t.Fatalf("load: %v\n%s", err, y)
	}
	return c, w
}

// loadErr parses a YAML string that must fail, and returns its *Errors.
func loadErr(t *testing.T, y string) []*Error {
	t.Helper()
	c, _, err := LoadBytes("test.yaml", []byte(y))
	if err == nil {
		t.Fatalf("loaded without error (%+v):\n%s", c, y)
	}
	return flatten(t, err)
}

// flatten unpacks a joined error into its *Errors, failing on anything
// else.
func flatten(t *testing.T, err error) []*Error {
	t.Helper()
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("not a *config.Error: %T %v", err, err)
		}
		out = append(out, e)
	}
	walk(err)
	return out
}

// valueAt follows a key path ("node.limits.max_peers", "peers[0].npub",
// "transports.udp.main.mtu") through yaml tags, so tests address values
// by upstream's key names. Pointers are dereferenced (nil yields nil).
func valueAt(t *testing.T, root any, path string) any {
	t.Helper()
	v := reflect.ValueOf(root)
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			idx, _ = strconv.Atoi(strings.TrimSuffix(part[i+1:], "]"))
			part = part[:i]
		}
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil
			}
			v = v.Elem()
		}
		switch {
		case v.Kind() == reflect.Struct && v.FieldByName("Named").IsValid() && v.FieldByName("Single").IsValid():
			if s := v.FieldByName("Single"); !s.IsNil() {
				v = s.Elem()
				goto field
			}
			m := v.FieldByName("Named")
			e := m.MapIndex(reflect.ValueOf(part))
			if !e.IsValid() {
				t.Fatalf("%s: no instance %q", path, part)
			}
			v = e.Elem()
			continue
		}
	field:
		found := false
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Tag.Get("yaml") == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			t.Fatalf("%s: no key %q in %s", path, part, v.Type())
		}
		if idx >= 0 {
			v = v.Index(idx)
		}
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	return v.Interface()
}
