package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The decoder walks a yaml.Node tree against the Go types, reproducing
// serde_yaml 0.9's rules as upstream's derives apply them: defaults for
// absent keys, unknown keys an error only in the strict types, plain
// scalars only for numbers and booleans, an empty value as an empty mapping
// or sequence, null as "absent" for optional keys. It records where every
// key was read and keeps going after an error so a file's problems are
// reported together.

const (
	maxDepth      = 64
	maxNodeVisits = 1 << 20
	maxErrors     = 50
)

// Optional behaviours of the config types.
type (
	// strictKeys marks a type whose unknown keys are an error.
	strictKeys interface{ denyUnknownKeys() }
	// defaulter sets a freshly allocated value to its defaults.
	defaulter interface{ applyDefaults() }
	// enumType lists a string type's accepted values.
	enumType interface{ enumValues() []string }
	// scalarChecker validates a string scalar when it is read.
	scalarChecker interface{ checkScalar(string) error }
	// instancesType is implemented by *Instances[T].
	instancesType interface {
		decodeInstances(d *decoder, n *yaml.Node, path string, depth int)
		instanceType() reflect.Type
	}
)

// shared is the state every decoder of one load shares.
type shared struct {
	budget   int
	aborted  bool
	origin   map[*yaml.Node]string // node → file, for merged trees
	reported map[*yaml.Node]bool   // key nodes already warned about
	gateway  bool                  // read the gateway section (Linux)
}

type decoder struct {
	*shared
	file  string
	quiet bool // drop warnings
	// untagged: inside a transport section, which upstream reads through
	// an untagged enum; there a plain scalar that looks like a number,
	// boolean or null is not accepted as a string.
	untagged bool
	errs     []error
	warns    []Warning // at most maxWarnings
	// moreWarns counts the warnings past maxWarnings, left out.
	moreWarns int
	src       map[string]srcPos
}

func newDecoder(file string, sh *shared) *decoder {
	return &decoder{shared: sh, file: file, src: map[string]srcPos{}}
}

// child is a decoder whose findings can be adopted or dropped.
func (d *decoder) child() *decoder {
	c := newDecoder(d.file, d.shared)
	c.quiet, c.untagged = d.quiet, d.untagged
	return c
}

func (d *decoder) adopt(c *decoder) {
	d.errs = append(d.errs, c.errs...)
	if len(d.errs) > maxErrors {
		d.errs = d.errs[:maxErrors]
	}
	d.addWarnings(c.warns, c.moreWarns)
	for k, v := range c.src {
		d.src[k] = v
	}
}

func (d *decoder) fileOf(n *yaml.Node) string {
	if f, ok := d.origin[n]; ok {
		return f
	}
	return d.file
}

func (d *decoder) fail(n *yaml.Node, key string, class error, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	e := &Error{File: d.fileOf(n), Key: key, Reason: fmt.Sprintf(format, args...), Err: class}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

func (d *decoder) warnAt(n *yaml.Node, key, format string, args ...any) {
	if d.quiet || d.reported[n] {
		return
	}
	d.reported[n] = true
	d.addWarnings([]Warning{{File: d.fileOf(n), Line: n.Line, Key: key, Message: fmt.Sprintf(format, args...)}}, 0)
}

// addWarnings keeps warnings up to maxWarnings and counts the rest.
func (d *decoder) addWarnings(ws []Warning, more int) {
	room := max(0, maxWarnings-len(d.warns))
	if len(ws) > room {
		more += len(ws) - room
		ws = ws[:room]
	}
	d.warns = append(d.warns, ws...)
	d.moreWarns += more
}

func (d *decoder) record(path string, n *yaml.Node) {
	d.src[path] = srcPos{file: d.fileOf(n), line: n.Line}
}

// spend charges one node visit against the load's budget.
func (d *decoder) spend(n *yaml.Node, path string) bool {
	if d.aborted {
		return false
	}
	d.budget--
	if d.budget < 0 {
		d.aborted = true
		d.fail(n, path, ErrSyntax, "document too large (too many nodes or alias expansions)")
		return false
	}
	return true
}

// resolve follows aliases.
func (d *decoder) resolve(n *yaml.Node, path string) *yaml.Node {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode; hops++ {
		if hops > maxDepth || n.Alias == nil {
			d.fail(n, path, ErrSyntax, "unresolvable alias")
			return nil
		}
		n = n.Alias
	}
	return n
}

func isPlain(n *yaml.Node) bool {
	return n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// isEmptyScalar: "key:" with nothing after it, which serde_yaml reads as an
// empty mapping or sequence.
func isEmptyScalar(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" && isPlain(n)
}

// isNullish: what serde_yaml reads as None for an optional key.
func isNullish(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && isPlain(n) && isNullWord(n.Value)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describe names a node's kind for a type error, hiding values that may
// be secret.
func describe(n *yaml.Node, path string) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		if isEmptyScalar(n) {
			return "an empty value"
		}
		if isNullish(n) {
			return "null"
		}
		if strings.HasPrefix(path, "node.identity") || len(n.Value) > 64 {
			return "a scalar"
		}
		if isPlain(n) {
			return strconv.Quote(n.Value)
		}
		return "the quoted string " + strconv.Quote(n.Value)
	}
	return "an unsupported node"
}

// field describes one yaml-tagged struct field.
type field struct {
	index    int
	name     string
	alias    string
	required bool
	optional bool // an Option upstream: null means "use the default"
}

func fieldsOf(t reflect.Type) []field {
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name := sf.Tag.Get("yaml")
		if name == "" || !sf.IsExported() {
			continue
		}
		f := field{index: i, name: name}
		for _, opt := range strings.Split(sf.Tag.Get("fips"), ",") {
			switch {
			case opt == "required":
				f.required = true
			case opt == "optional":
				f.optional = true
			case strings.HasPrefix(opt, "alias="):
				f.alias = strings.TrimPrefix(opt, "alias=")
			}
		}
		fs = append(fs, f)
	}
	return fs
}

func lookupField(fs []field, key string) int {
	for i, f := range fs {
		if f.name == key || (f.alias != "" && f.alias == key) {
			return i
		}
	}
	return -1
}

func fieldNames(fs []field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// applyDefaults sets v (addressable) to its type's defaults, if it has any.
func applyDefaults(v reflect.Value) {
	if df, ok := v.Addr().Interface().(defaulter); ok {
		df.applyDefaults()
	}
}

// decodeValue decodes n into v (addressable), which already holds the
// value's defaults.
func (d *decoder) decodeValue(n *yaml.Node, v reflect.Value, path string, depth int) {
	if depth > maxDepth {
		d.fail(n, path, ErrSyntax, "nesting too deep")
		return
	}
	if n = d.resolve(n, path); n == nil || !d.spend(n, path) {
		return
	}
	if it, ok := v.Addr().Interface().(instancesType); ok {
		it.decodeInstances(d, n, path, depth)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if isNullish(n) {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		applyDefaults(p.Elem())
		d.decodeValue(n, p.Elem(), path, depth)
		v.Set(p)
	case reflect.Struct:
		d.decodeStruct(n, v, path, depth)
	case reflect.Slice:
		if isEmptyScalar(n) {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, ErrType, "expected a sequence, got %s", describe(n, path))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, en := range n.Content {
			ep := fmt.Sprintf("%s[%d]", path, i)
			elem := s.Index(i)
			applyDefaults(elem)
			d.record(ep, en)
			d.decodeValue(en, elem, ep, depth+1)
		}
		v.Set(s)
	case reflect.String:
		d.decodeString(n, v, path)
	case reflect.Bool:
		if n.Kind == yaml.ScalarNode && isPlain(n) {
			switch n.Value {
			case "true", "True", "TRUE":
				v.SetBool(true)
				return
			case "false", "False", "FALSE":
				v.SetBool(false)
				return
			}
		}
		d.fail(n, path, ErrType, "expected a boolean (true or false), got %s", describe(n, path))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		bits := v.Type().Bits()
		if n.Kind == yaml.ScalarNode && isPlain(n) {
			if u, ok := parseUnsigned(n.Value); ok {
				if bits < 64 && u >= 1<<bits {
					d.fail(n, path, ErrType, "%s is out of range for an unsigned %d-bit integer (0..%d)", n.Value, bits, uint64(1)<<bits-1)
					return
				}
				v.SetUint(u)
				return
			}
		}
		d.fail(n, path, ErrType, "expected an unsigned %d-bit integer, got %s", bits, describe(n, path))
	case reflect.Float64:
		if n.Kind == yaml.ScalarNode && isPlain(n) {
			if f, ok := parseFloat(n.Value); ok {
				v.SetFloat(f)
				return
			}
		}
		d.fail(n, path, ErrType, "expected a number, got %s", describe(n, path))
	default:
		d.fail(n, path, ErrType, "unsupported field type %s", v.Type())
	}
}

func (d *decoder) decodeString(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, ErrType, "expected a string, got %s", describe(n, path))
		return
	}
	s := n.Value
	if d.untagged && isPlain(n) {
		if kind := untaggedKind(s); kind != "" {
			d.fail(n, path, ErrType, "expected a string, got %s %s (quote it)", kind, describe(n, path))
			return
		}
	}
	if et, ok := v.Interface().(enumType); ok {
		vals := et.enumValues()
		found := false
		for _, want := range vals {
			found = found || s == want
		}
		if !found {
			d.fail(n, path, ErrType, "unknown value %s, expected one of: %s", describe(n, path), strings.Join(vals, ", "))
			return
		}
	}
	if sc, ok := v.Interface().(scalarChecker); ok {
		if err := sc.checkScalar(s); err != nil {
			d.fail(n, path, ErrType, "%s: %v", describe(n, path), err)
			return
		}
	}
	v.SetString(s)
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, depth int) {
	if isEmptyScalar(n) {
		return // every key absent
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, ErrType, "expected a mapping, got %s", describe(n, path))
		return
	}
	fs := fieldsOf(v.Type())
	_, strict := v.Addr().Interface().(strictKeys)
	seen := make(map[int]*yaml.Node)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := d.resolve(n.Content[i], path)
		if kn == nil || !d.spend(kn, path) {
			return
		}
		if kn.Kind != yaml.ScalarNode {
			d.fail(kn, path, ErrType, "a key must be a string, got %s", describe(kn, path))
			continue
		}
		key := kn.Value
		kpath := joinPath(path, key)
		fi := lookupField(fs, key)
		if fi >= 0 && v.Type() == reflect.TypeFor[Config]() && fs[fi].name == "gateway" && !d.gateway {
			d.warnAt(kn, kpath, "the gateway section is read only on Linux; ignored")
			continue
		}
		if fi < 0 {
			if strict {
				d.fail(kn, kpath, ErrUnknownKey, "unknown key %q; expected one of: %s", key, fieldNames(fs))
			} else {
				d.warnAt(kn, kpath, "unknown key ignored")
			}
			continue
		}
		if prev, dup := seen[fi]; dup {
			d.fail(kn, kpath, ErrDuplicateKey, "duplicate key %q (first at line %d)", fs[fi].name, prev.Line)
			continue
		}
		seen[fi] = kn
		d.record(joinPath(path, fs[fi].name), kn)
		if fs[fi].optional {
			if vn := d.resolve(n.Content[i+1], kpath); vn == nil || isNullish(vn) {
				continue
			}
		}
		d.decodeValue(n.Content[i+1], v.Field(fs[fi].index), joinPath(path, fs[fi].name), depth+1)
	}
	for i, f := range fs {
		if _, ok := seen[i]; f.required && !ok {
			d.fail(n, joinPath(path, f.name), ErrMissingKey, "missing required key %q", f.name)
		}
	}
}

// decodeInstances reads one transports.<type> section the way upstream's
// untagged enum does: as a single instance if that parses cleanly,
// otherwise as a map of named instances.
func (in *Instances[T]) decodeInstances(d *decoder, n *yaml.Node, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, ErrType, "expected the transport's keys or a mapping of named instances, got %s", describe(n, path))
		return
	}
	single := new(T)
	applyDefaults(reflect.ValueOf(single).Elem())
	ds := d.child()
	ds.untagged = true
	ds.decodeValue(n, reflect.ValueOf(single).Elem(), path, depth)
	if len(ds.errs) == 0 {
		d.adopt(ds)
		in.Single, in.Named = single, nil
		return
	}
	dn := d.child()
	dn.untagged = true
	named := make(map[string]*T)
	intendedSingle := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := dn.resolve(n.Content[i], path)
		if kn == nil {
			break
		}
		vn := dn.resolve(n.Content[i+1], path)
		if vn == nil {
			break
		}
		if kn.Kind != yaml.ScalarNode {
			dn.fail(kn, path, ErrType, "an instance name must be a string, got %s", describe(kn, path))
			continue
		}
		ipath := joinPath(path, kn.Value)
		if vn.Kind != yaml.MappingNode {
			intendedSingle = true
			dn.fail(vn, ipath, ErrType, "a named instance must be a mapping, got %s", describe(vn, ipath))
			continue
		}
		if _, dup := named[kn.Value]; dup {
			dn.warnAt(kn, ipath, "duplicate instance name; the later one wins")
		}
		inst := new(T)
		applyDefaults(reflect.ValueOf(inst).Elem())
		dn.record(ipath, kn)
		dn.decodeValue(vn, reflect.ValueOf(inst).Elem(), ipath, depth+1)
		named[kn.Value] = inst
	}
	if len(dn.errs) == 0 {
		d.adopt(dn)
		in.Single, in.Named = nil, named
		return
	}
	// Neither form fits; report against the form the author evidently
	// meant: keys with scalar values mean a single instance.
	if intendedSingle {
		d.adopt(ds)
	} else {
		d.adopt(dn)
	}
}

func (in *Instances[T]) instanceType() reflect.Type { return reflect.TypeFor[T]() }

// parseUnsigned reads an unsigned integer as serde_yaml does: decimal
// (no leading zeros), 0x, 0o or 0b, with an optional leading '+'.
func parseUnsigned(s string) (uint64, bool) {
	s = strings.TrimPrefix(s, "+")
	for _, p := range []struct {
		prefix string
		base   int
	}{{"0x", 16}, {"0o", 8}, {"0b", 2}} {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			if rest == "" || rest[0] == '+' || rest[0] == '-' {
				return 0, false
			}
			u, err := strconv.ParseUint(rest, p.base, 64)
			return u, err == nil
		}
	}
	if s == "" || s[0] == '+' || s[0] == '-' || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	u, err := strconv.ParseUint(s, 10, 64)
	return u, err == nil
}

// untaggedKind classifies a plain scalar as serde_yaml does when the
// target type is not known yet: "null", "boolean", "number", or "" for a
// string.
func untaggedKind(s string) string {
	switch {
	case isNullWord(s):
		return "null"
	case s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE":
		return "boolean"
	}
	if _, ok := parseUnsigned(strings.TrimPrefix(s, "-")); ok && !strings.HasPrefix(s, "-+") {
		return "number"
	}
	unsigned := strings.TrimLeft(s, "+-")
	leadingZeroDigits := len(unsigned) > 1 && unsigned[0] == '0' && strings.Trim(unsigned[1:], "0123456789") == ""
	if _, ok := parseFloat(s); ok && !leadingZeroDigits {
		return "number"
	}
	return ""
}

func isNullWord(s string) bool {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// parseFloat reads a float as serde_yaml does: .inf/.nan spellings, or a
// finite decimal number.
func parseFloat(s string) (float64, bool) {
	un := s
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		if rest == "" || rest[0] == '+' || rest[0] == '-' {
			return 0, false
		}
		un = rest
	}
	switch {
	case un == ".inf" || un == ".Inf" || un == ".INF":
		return math.Inf(1), true
	case s == "-.inf" || s == "-.Inf" || s == "-.INF":
		return math.Inf(-1), true
	case s == ".nan" || s == ".NaN" || s == ".NAN":
		return math.NaN(), true
	}
	if strings.ContainsAny(un, "_xXpP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(un, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// errList turns collected errors into one error (nil when there are none).
func errList(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
