//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Impl is an implementation of the daemon: fips-go or upstream.
type Impl byte

const (
	G Impl = 'g' // fips-go
	U Impl = 'u' // upstream (whatever FIPS_UPSTREAM holds)
)

func (i Impl) String() string { return string(rune(i)) }

// Name is the implementation's long name.
func (i Impl) Name() string {
	if i == G {
		return "fips-go"
	}
	return "upstream"
}

// Other is the other implementation.
func (i Impl) Other() Impl {
	if i == G {
		return U
	}
	return G
}

// Perms lists every sequence of n implementations, fips-go first at each
// position: for 3, ggg ggu gug guu ugg ugu uug uuu.
func Perms(n int) [][]Impl {
	out := [][]Impl{{}}
	for range n {
		var next [][]Impl
		for _, p := range out {
			for _, i := range []Impl{G, U} {
				next = append(next, append(slices.Clone(p), i))
			}
		}
		out = next
	}
	return out
}

// Join writes a sequence of implementations with sep between them.
func Join(seq []Impl, sep string) string {
	parts := make([]string, len(seq))
	for k, i := range seq {
		parts[k] = i.String()
	}
	return strings.Join(parts, sep)
}

// Graph is a mesh to build: the implementation of each node and the
// links between them (node indices).
type Graph struct {
	Impls []Impl
	Edges [][2]int
}

// RandomMesh is a connected random graph of n nodes (n ≥ 2) with n−1+extra
// links, drawn from seed: a random recursive tree (each node links to an
// earlier one) plus extra links between unlinked pairs, and a random
// implementation for every node with at least n/3 of each.
func RandomMesh(n, extra int, seed uint64) Graph {
	rng := rand.New(rand.NewPCG(seed, 0x6669707320676f))
	var g Graph
	linked := map[[2]int]bool{}
	add := func(a, b int) bool {
		if a > b {
			a, b = b, a
		}
		if a == b || linked[[2]int{a, b}] {
			return false
		}
		linked[[2]int{a, b}] = true
		g.Edges = append(g.Edges, [2]int{a, b})
		return true
	}
	for i := 1; i < n; i++ {
		add(rng.IntN(i), i)
	}
	for added, tries := 0, 0; added < extra && tries < 100*n*n; tries++ {
		if add(rng.IntN(n), rng.IntN(n)) {
			added++
		}
	}
	for {
		g.Impls = make([]Impl, n)
		count := map[Impl]int{}
		for k := range g.Impls {
			g.Impls[k] = []Impl{G, U}[rng.IntN(2)]
			count[g.Impls[k]]++
		}
		if 3*count[G] >= n && 3*count[U] >= n {
			return g
		}
	}
}

// Connected reports whether edges join all n nodes.
func Connected(n int, edges [][2]int) bool {
	seen := make([]bool, n)
	adj := make([][]int, n)
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	stack, reached := []int{0}, 0
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[v] {
			continue
		}
		seen[v] = true
		reached++
		stack = append(stack, adj[v]...)
	}
	return n == 0 || reached == n
}

// RoundRobin schedules every unordered pair of n nodes into rounds in
// which no node appears twice (the circle method: n−1 rounds, n for odd
// n). Which end comes first alternates.
func RoundRobin(n int) [][][2]int {
	m := n + n%2 // odd n: node n is a bye
	idx := make([]int, m)
	for k := range idx {
		idx[k] = k
	}
	var rounds [][][2]int
	for r := range m - 1 {
		var round [][2]int
		for k := range m / 2 {
			a, b := idx[k], idx[m-1-k]
			if a >= n || b >= n {
				continue
			}
			if (r+k)%2 == 1 {
				a, b = b, a
			}
			round = append(round, [2]int{a, b})
		}
		rounds = append(rounds, round)
		// Everyone but idx[0] moves one place round the circle.
		last := idx[m-1]
		copy(idx[2:], idx[1:m-1])
		idx[1] = last
	}
	return rounds
}

// Count says how many nodes of each implementation a graph has: "5g 5u".
func (g Graph) Count() string {
	c := map[Impl]int{}
	for _, i := range g.Impls {
		c[i]++
	}
	return fmt.Sprintf("%dg %du", c[G], c[U])
}

// upstreamTopLevel are the top-level sections of upstream's fips.yaml
// (its config.Config). Everything else, dataplane above all, is fips-go's.
var upstreamTopLevel = []string{"node", "tun", "dns", "transports", "peers", "gateway"}

// ExtraFor is the YAML an implementation's node gets appended to its
// fips.yaml: goOnly (sections only fips-go knows, such as dataplane) for
// fips-go, nothing for upstream.
func ExtraFor(i Impl, goOnly string) string {
	if i == G {
		return goOnly
	}
	return ""
}

// NodeFor is what the node: section of a node of implementation i gets
// for the fips-go nodes' wire format: node.wire_format, which upstream
// does not have, for fips-go only and only when not master's.
func NodeFor(i Impl, format string) string {
	if i != G || format == "" || format == "v0" {
		return ""
	}
	return "  wire_format: " + format + "\n"
}

// checkFormat accepts the formats -format takes.
func checkFormat(f string) error {
	switch f {
	case "v0", "v1", "auto":
		return nil
	}
	return fmt.Errorf("%q is none of v0, v1, auto", f)
}

// UpstreamKeysOnly fails unless every top-level key of the YAML document
// doc is one of upstream's sections.
func UpstreamKeysOnly(doc string) error {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		return err
	}
	for k := range m {
		if !slices.Contains(upstreamTopLevel, k) {
			return fmt.Errorf("%q is not a section of upstream's configuration", k)
		}
	}
	return nil
}

// Result is how a row ended.
type Result string

const (
	Pass Result = "PASS"
	Fail Result = "FAIL"
	Skip Result = "SKIP"
)

// Row is one line of the table.
type Row struct {
	Scenario string
	Impls    string
	Result   Result
	Figure   string
	Took     time.Duration
	// Logs is the row's folder of node logs (printed for failing rows).
	Logs string
}

// Table renders rows as an aligned text table with a header.
func Table(rows []Row) string {
	head := []string{"#", "scenario", "impls", "result", "figure", "time"}
	cells := [][]string{head}
	for k, r := range rows {
		cells = append(cells, []string{fmt.Sprint(k + 1), r.Scenario, r.Impls, string(r.Result), r.Figure, Seconds(r.Took)})
	}
	width := make([]int, len(head))
	for _, row := range cells {
		for c, s := range row {
			width[c] = max(width[c], len([]rune(s)))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		var parts []string
		for c, s := range row {
			pad := width[c] - len([]rune(s))
			if c == 0 || c == len(row)-1 {
				parts = append(parts, strings.Repeat(" ", pad)+s) // numbers right-aligned
			} else {
				parts = append(parts, s+strings.Repeat(" ", pad))
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(parts, " | "), " ") + "\n")
	}
	line(cells[0])
	var rule []string
	for _, w := range width {
		rule = append(rule, strings.Repeat("-", w))
	}
	b.WriteString(strings.Join(rule, "-|-") + "\n")
	for _, row := range cells[1:] {
		line(row)
	}
	return b.String()
}

// Seconds formats a duration as seconds with one decimal: "12.3 s".
func Seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// Ms formats a duration in whole milliseconds: "123 ms".
func Ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// Mbit formats a bit rate in Mbit/s: "512 Mbit/s".
func Mbit(bps float64) string { return fmt.Sprintf("%.0f Mbit/s", bps/1e6) }

// LongestStall is the longest run of consecutive iperf3 intervals (each
// of the given length) that moved less than 1% of the median interval's
// bytes, as a duration.
func LongestStall(bytes []float64, interval time.Duration) time.Duration {
	if len(bytes) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(bytes))
	floor := sorted[len(sorted)/2] / 100
	longest, run := 0, 0
	for _, b := range bytes {
		if b <= floor {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return time.Duration(longest) * interval
}
