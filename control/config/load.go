package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// FileName is the configuration file's name in every search directory.
const FileName = "fips.yaml"

// maxFileSize bounds what the loaders read: yaml.v3 holds some 40 bytes
// of node tree per byte of input, so this bounds a load to about 100 MB.
// A fips.yaml listing ten thousand peers is well under it.
const maxFileSize = 2 << 20

// maxWarnings bounds the warnings one load returns (each is a log line at
// startup); one more warning says how many were left out.
const maxWarnings = 100

// Load reads exactly one file, as `fips -c FILE` does: no search, no
// merge. Warnings (ignored keys, deprecated spellings) are returned, not
// logged. The error, if any, is one or more *Error joined.
func Load(path string) (*Config, []Warning, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	return LoadBytes(path, data)
}

// LoadBytes parses data as a fips.yaml called name (used in messages).
func LoadBytes(name string, data []byte) (*Config, []Warning, error) {
	if len(data) > maxFileSize {
		return nil, nil, tooLarge(name)
	}
	sh := newShared()
	f := parseFile(name, data, sh)
	var warns warnings
	warns.add(f.warns, f.moreWarns, name)
	if len(f.errs) > 0 {
		return nil, warns.result(), errList(f.errs)
	}
	cfg, d := decodeRoot(name, f.root, sh, false)
	warns.add(d.warns, d.moreWarns, name)
	if len(d.errs) > 0 {
		return nil, warns.result(), errList(d.errs)
	}
	return cfg, warns.result(), nil
}

// warnings collects a load's warnings, keeping maxWarnings of them.
type warnings struct {
	list []Warning
	more int
	file string // the file of the first warning left out
}

func (w *warnings) add(ws []Warning, more int, file string) {
	room := max(0, maxWarnings-len(w.list))
	if len(ws) > room {
		more += len(ws) - room
		ws = ws[:room]
	}
	w.list = append(w.list, ws...)
	if more > 0 && w.more == 0 {
		w.file = file
	}
	w.more += more
}

// result is the kept warnings, then one counting those left out.
func (w *warnings) result() []Warning {
	if w.more == 0 {
		return w.list
	}
	return append(w.list, Warning{File: w.file, Message: fmt.Sprintf("%d more warnings not shown (at most %d are reported)", w.more, maxWarnings)})
}

func tooLarge(name string) error {
	return &Error{File: name, Reason: fmt.Sprintf("file larger than %d bytes", maxFileSize), Err: ErrRead}
}

// LoadSearchPaths loads and merges every file of SearchPaths() that exists,
// as `fips` without -c does, and returns the files it loaded (the key
// directory is the last one's; see KeyDir).
func LoadSearchPaths() (*Config, []string, []Warning, error) {
	return LoadFiles(SearchPaths())
}

// LoadFiles loads and merges the files among paths that exist, lowest
// priority first. Unlike upstream, the merge is a deep merge of the YAML:
// a later file overrides exactly the keys it sets (lists as a whole, and
// transport instances by name), and leaves every other key as the earlier
// files set it.
func LoadFiles(paths []string) (*Config, []string, []Warning, error) {
	sh := newShared()
	var (
		loaded []string
		files  []parsedFile
		warns  warnings
		errs   []error
		last   *Config
	)
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		data, err := readFile(p)
		if err != nil {
			return nil, loaded, warns.result(), err
		}
		loaded = append(loaded, p)
		f := parseFile(p, data, sh)
		warns.add(f.warns, f.moreWarns, p)
		if len(f.errs) > 0 {
			errs = append(errs, f.errs...)
			continue
		}
		cfg, d := decodeRoot(p, f.root, sh, false)
		warns.add(d.warns, d.moreWarns, p)
		if len(d.errs) > 0 {
			errs = append(errs, d.errs...)
			continue
		}
		files = append(files, f)
		last = cfg
	}
	if len(errs) > 0 {
		return nil, loaded, warns.result(), errList(errs)
	}
	switch len(files) {
	case 0:
		return Default(), loaded, warns.result(), nil
	case 1:
		return last, loaded, warns.result(), nil
	}
	sh.origin = make(map[*yaml.Node]string)
	var merged *yaml.Node
	for _, f := range files {
		markOrigin(f.root, f.name, sh.origin, 0)
		merged = mergeNodes(merged, f.root, reflect.TypeFor[Config](), sh)
	}
	cfg, d := decodeRoot(loaded[len(loaded)-1], merged, sh, true)
	if len(d.errs) > 0 {
		return nil, loaded, warns.result(), errList(d.errs)
	}
	return cfg, loaded, warns.result(), nil
}

// SearchPaths lists where fips looks for fips.yaml without -c, lowest
// priority first: the system directory (on macOS and FreeBSD the legacy
// /etc/fips first, then /usr/local/etc/fips), the user configuration
// directory, ~/.fips.yaml, ./fips.yaml.
func SearchPaths() []string {
	var paths []string
	add := func(p string) {
		for _, q := range paths {
			if q == p {
				return
			}
		}
		paths = append(paths, p)
	}
	if d := LegacySystemConfigDir(); d != "" {
		add(filepath.Join(d, FileName))
	}
	add(filepath.Join(SystemConfigDir(), FileName))
	if d, err := os.UserConfigDir(); err == nil {
		add(filepath.Join(d, "fips", FileName))
	}
	if h, err := os.UserHomeDir(); err == nil {
		add(filepath.Join(h, ".fips.yaml"))
	}
	add("." + string(filepath.Separator) + FileName)
	return paths
}

// KeyDir is where fips.key and fips.pub live: the directory of the last
// loaded file, or of the first search path when none was loaded.
// EtcDirEnv names the environment variable that moves the directory of
// the hosts, peers.allow and peers.deny files (fips-go's addition, for
// tests and unprivileged runs; upstream's paths are fixed).
const EtcDirEnv = "FIPS_ETC_DIR"

// EtcDir is the directory of the hosts, peers.allow and peers.deny files,
// as upstream resolves them: /etc/fips (macOS, FreeBSD /usr/local/etc/fips;
// Windows C:\ProgramData\fips), whatever directory the configuration came
// from; $FIPS_ETC_DIR when set. The key file alone lives next to the
// configuration (KeyDir), as upstream keeps it.
func EtcDir() string {
	if d := os.Getenv(EtcDirEnv); d != "" {
		return d
	}
	return etcDir
}

func KeyDir(loaded []string) string {
	if len(loaded) > 0 {
		return filepath.Dir(loaded[len(loaded)-1])
	}
	return filepath.Dir(SearchPaths()[0])
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Reason: err.Error(), Err: ErrRead}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Reason: err.Error(), Err: ErrRead}
	}
	if len(data) > maxFileSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

func newShared() *shared {
	return &shared{
		budget:   maxNodeVisits,
		reported: make(map[*yaml.Node]bool),
		gateway:  runtime.GOOS == "linux",
	}
}

// parsedFile is one file's YAML with deprecated keys folded in.
type parsedFile struct {
	name  string
	root  *yaml.Node // nil for an empty document
	errs  []error
	warns []Warning
	// moreWarns counts warnings past maxWarnings, left out.
	moreWarns int
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func parseFile(name string, data []byte, sh *shared) (f parsedFile) {
	f.name = name
	defer func() {
		if r := recover(); r != nil {
			f.root = nil
			f.errs = []error{&Error{File: name, Reason: fmt.Sprintf("YAML parser failure: %v", r), Err: ErrSyntax}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return f
		}
		f.errs = []error{syntaxError(name, data, err)}
		return f
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			f.errs = []error{syntaxError(name, data, err)}
		} else {
			f.errs = []error{&Error{File: name, Line: extra.Line, Reason: "more than one YAML document in the file", Err: ErrSyntax}}
		}
		return f
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return f
		}
		f.root = doc.Content[0]
	} else {
		f.root = &doc
	}
	d := newDecoder(name, sh)
	f.root = d.foldLegacyDiscovery(f.root)
	f.errs, f.warns, f.moreWarns = d.errs, d.warns, d.moreWarns
	return f
}

// syntaxError locates a parser error. yaml.v3 reports the line where the
// enclosing construct began (and that off by one), not where parsing
// failed, so the line is found again: the first line at which a prefix of
// the document fails with the same complaint.
func syntaxError(name string, data []byte, err error) error {
	msg := err.Error()
	e := &Error{File: name, Reason: strings.TrimPrefix(msg, "yaml: "), Err: ErrSyntax}
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Reason = m[2]
	}
	if line := failingLine(data, e.Reason); line > 0 {
		e.Line = line
	}
	return e
}

// maxRelocateWork bounds the bytes the prefix search of syntaxError may
// parse in total; past it, yaml.v3's own line is kept.
const maxRelocateWork = 16 << 20

func failingLine(data []byte, reason string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	end, work := 0, 0
	for k, l := range lines {
		end += len(l)
		if work += end; work > maxRelocateWork {
			return 0
		}
		var n yaml.Node
		err := parsePrefix(data[:end], &n)
		if err == nil {
			continue
		}
		msg := err.Error()
		if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
			msg = m[2]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		if msg == reason {
			return k + 1
		}
	}
	return 0
}

// parsePrefix parses the first document of data, turning a parser panic
// into an error.
func parsePrefix(data []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parser failure: %v", r)
		}
	}()
	err = yaml.NewDecoder(bytes.NewReader(data)).Decode(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// decodeRoot decodes a (possibly nil) root node over the defaults.
func decodeRoot(name string, root *yaml.Node, sh *shared, quiet bool) (*Config, *decoder) {
	d := newDecoder(name, sh)
	d.quiet = quiet
	cfg := Default()
	if root != nil {
		d.decodeValue(root, reflect.ValueOf(cfg).Elem(), "", 0)
	}
	cfg.src = d.src
	return cfg, d
}

// discoveryCompat is the deprecated node.discovery block: every key
// optional, unknown keys ignored.
type discoveryCompat struct {
	TTL                    *uint8       `yaml:"ttl"`
	AttemptTimeoutsSecs    *[]uint64    `yaml:"attempt_timeouts_secs"`
	RecentExpirySecs       *uint64      `yaml:"recent_expiry_secs"`
	BackoffBaseSecs        *uint64      `yaml:"backoff_base_secs"`
	BackoffMaxSecs         *uint64      `yaml:"backoff_max_secs"`
	ForwardMinIntervalSecs *uint64      `yaml:"forward_min_interval_secs"`
	Nostr                  *NostrConfig `yaml:"nostr"`
	LAN                    *LANConfig   `yaml:"lan"`
}

// foldLegacyDiscovery rewrites a deprecated node.discovery block into
// node.lookup.* and node.rendezvous.{nostr,lan} as upstream does: each
// legacy key that is set replaces the new key in the same file (nostr and
// lan as whole sections), with one warning. Nodes on the path are copied,
// never edited in place.
func (d *decoder) foldLegacyDiscovery(root *yaml.Node) *yaml.Node {
	r := d.resolve(root, "")
	if r == nil || r.Kind != yaml.MappingNode {
		return root
	}
	ni := findKeys(r, "node")
	if len(ni) != 1 {
		return root // absent, or a duplicate the decoder reports
	}
	node := d.resolve(r.Content[ni[0]+1], "node")
	if node == nil || node.Kind != yaml.MappingNode {
		return root
	}
	di := findKeys(node, "discovery")
	if len(di) == 0 {
		return root
	}
	newNode := copyMapping(node, di...)
	newRoot := copyMapping(r)
	newRoot.Content[ni[0]+1] = newNode
	if len(di) > 1 {
		kn := node.Content[di[1]]
		d.fail(kn, "node.discovery", ErrDuplicateKey, "duplicate key %q (first at line %d)", "discovery", node.Content[di[0]].Line)
		return newRoot
	}
	dk := node.Content[di[0]]
	dv := d.resolve(node.Content[di[0]+1], "node.discovery")
	if dv == nil || isNullish(dv) {
		return newRoot // an empty legacy block is no block at all
	}
	c := d.child()
	var compat discoveryCompat
	c.decodeValue(dv, reflect.ValueOf(&compat).Elem(), "node.discovery", 1)
	d.adopt(c)
	if len(c.errs) > 0 {
		return newRoot
	}
	d.warnAt(dk, "node.discovery", "deprecated: mesh-lookup keys moved to node.lookup.*, rendezvous keys to node.rendezvous.nostr.* and node.rendezvous.lan.*; the legacy block still applies, overriding the new keys in this file")
	for i := 0; i+1 < len(dv.Content); i += 2 {
		kn := d.resolve(dv.Content[i], "node.discovery")
		vn := dv.Content[i+1]
		if kn == nil || kn.Kind != yaml.ScalarNode {
			continue
		}
		if rv := d.resolve(vn, "node.discovery"); rv == nil || isNullish(rv) {
			continue
		}
		section := ""
		switch kn.Value {
		case "ttl", "attempt_timeouts_secs", "recent_expiry_secs", "backoff_base_secs", "backoff_max_secs", "forward_min_interval_secs":
			section = "lookup"
		case "nostr", "lan":
			section = "rendezvous"
		default:
			continue
		}
		setIn(newNode, section, kn, vn, d)
	}
	return newRoot
}

// setIn sets section.key = value inside mapping m (edited in place, as m is
// already a copy), copying or creating the section mapping.
func setIn(m *yaml.Node, section string, key, value *yaml.Node, d *decoder) {
	si := findKeys(m, section)
	var sec *yaml.Node
	switch {
	case len(si) == 0:
		sec = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: key.Line, Column: key.Column}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: section, Line: key.Line, Column: key.Column}, sec)
	case len(si) == 1:
		cur := d.resolve(m.Content[si[0]+1], section)
		switch {
		case cur == nil:
			return
		case isEmptyScalar(cur):
			sec = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: cur.Line, Column: cur.Column}
		case cur.Kind == yaml.MappingNode:
			sec = copyMapping(cur)
		default:
			return // wrong type: the decoder will say so
		}
		m.Content[si[0]+1] = sec
	default:
		return // duplicate: the decoder will say so
	}
	if ki := findKeys(sec, key.Value); len(ki) > 0 {
		sec.Content[ki[0]+1] = value
		return
	}
	sec.Content = append(sec.Content, key, value)
}

// findKeys returns the Content indexes of m's keys named key.
func findKeys(m *yaml.Node, key string) []int {
	var idx []int
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			idx = append(idx, i)
		}
	}
	return idx
}

// copyMapping copies a mapping node, leaving out the pairs at drop.
func copyMapping(m *yaml.Node, drop ...int) *yaml.Node {
	c := *m
	c.Content = make([]*yaml.Node, 0, len(m.Content))
	c.Anchor = ""
outer:
	for i := 0; i+1 < len(m.Content); i += 2 {
		for _, j := range drop {
			if i == j {
				continue outer
			}
		}
		c.Content = append(c.Content, m.Content[i], m.Content[i+1])
	}
	return &c
}

// markOrigin records which file every node came from.
func markOrigin(n *yaml.Node, file string, origin map[*yaml.Node]string, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	if _, ok := origin[n]; ok {
		return
	}
	origin[n] = file
	for _, c := range n.Content {
		markOrigin(c, file, origin, depth+1)
	}
}

// mergeNodes deep-merges over onto base, following the Go type t: mappings
// of struct types merge key by key, transport sections merge instance by
// instance when both files use the same form, anything else (scalars,
// lists, a change of transport form) is replaced. An empty or null value in
// over leaves base alone. Neither input is modified.
func mergeNodes(base, over *yaml.Node, t reflect.Type, sh *shared) *yaml.Node {
	if base == nil {
		return over
	}
	if over == nil {
		return base
	}
	scratch := newDecoder("", sh)
	scratch.quiet = true
	b, o := scratch.resolve(base, ""), scratch.resolve(over, "")
	if b == nil || o == nil {
		return over
	}
	if isNullish(o) {
		return base
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || b.Kind != yaml.MappingNode || o.Kind != yaml.MappingNode {
		return over
	}
	if it, ok := reflect.New(t).Interface().(instancesType); ok {
		et := it.instanceType()
		baseSingle, overSingle := singleForm(b, et, sh), singleForm(o, et, sh)
		switch {
		case baseSingle && overSingle:
			return mergeMappings(b, o, sh, structKeys(et))
		case !baseSingle && !overSingle:
			return mergeMappings(b, o, sh, func(key string) (reflect.Type, string) { return et, key })
		}
		return over
	}
	return mergeMappings(b, o, sh, structKeys(t))
}

// structKeys classifies the keys of a struct type's mapping: the type of
// the key's value (nil for an unknown key, which is replaced wholesale) and
// its canonical name, so an alias in one file matches the key in another.
func structKeys(t reflect.Type) func(string) (reflect.Type, string) {
	fs := fieldsOf(t)
	return func(key string) (reflect.Type, string) {
		if i := lookupField(fs, key); i >= 0 {
			return t.Field(fs[i].index).Type, fs[i].name
		}
		return nil, key
	}
}

// mergeMappings merges mapping o over mapping b, matching keys by their
// canonical names.
func mergeMappings(b, o *yaml.Node, sh *shared, classify func(string) (reflect.Type, string)) *yaml.Node {
	out := copyMapping(b)
	sh.origin[out] = sh.origin[o]
	out.Line, out.Column = o.Line, o.Column
	canon := func(k *yaml.Node) string {
		if k.Kind != yaml.ScalarNode {
			return "\x00"
		}
		_, c := classify(k.Value)
		return c
	}
	// first maps a canonical key to the index of its first pair in out, so
	// the merge is linear in the keys (a scan per key was quadratic).
	first := make(map[string]int, len(out.Content)/2)
	index := func(j int) {
		if c := canon(out.Content[j]); first[c] == 0 {
			first[c] = j + 1 // 0 means absent
		}
	}
	for j := 0; j+1 < len(out.Content); j += 2 {
		index(j)
	}
	for i := 0; i+1 < len(o.Content); i += 2 {
		ok, ov := o.Content[i], o.Content[i+1]
		if ok.Kind != yaml.ScalarNode {
			out.Content = append(out.Content, ok, ov)
			index(len(out.Content) - 2)
			continue
		}
		if isNullish(ov) {
			continue
		}
		ft, name := classify(ok.Value)
		if j := first[name] - 1; j >= 0 {
			if ft != nil {
				out.Content[j+1] = mergeNodes(out.Content[j+1], ov, ft, sh)
			} else {
				out.Content[j+1] = ov
			}
			out.Content[j] = ok
			continue
		}
		out.Content = append(out.Content, ok, ov)
		index(len(out.Content) - 2)
	}
	return out
}

// singleForm reports whether a transport section parses as one unnamed
// instance of type t.
func singleForm(n *yaml.Node, t reflect.Type, sh *shared) bool {
	budget := sh.budget
	d := newDecoder("", sh)
	d.quiet = true
	v := reflect.New(t).Elem()
	applyDefaults(v)
	d.decodeValue(n, v, "", 1)
	sh.budget = budget
	return len(d.errs) == 0
}
