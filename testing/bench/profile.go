package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// A profile says where each process of a path spends its CPU while a TCP
// stream crosses it: `perf record -a -g` samples the whole machine (the
// kernel's receive work runs in softirq context, often on the sender's
// time, so one process's counters would miss it), `perf script` prints
// each sample's pid and call chain, and each sample goes to the category
// of the innermost frame that names one (a memcpy inside the AF_XDP
// receive is AF_XDP receive; the AEAD is a leaf).

// Category is one kind of work a sample is counted as.
type Category struct {
	Name string
	// Frames are substrings of the symbols that mark it.
	Frames []string
}

// Categories are the kinds of work, innermost match first. Order
// matters only for a frame that matches two: the first listed wins.
var Categories = []Category{
	{"AEAD (ChaCha20-Poly1305)", []string{"chacha20poly1305.", "chacha20."}},
	{"XDP program", []string{"bpf_prog_"}},
	{"AF_XDP receive (copy into UMEM)", []string{"__xsk_rcv", "xsk_rcv", "__xsk_map_redirect", "xsk_map_flush"}},
	{"veth XDP receive (skb copied for XDP)", []string{"veth_xdp_rcv_skb", "skb_pp_cow_data", "veth_xdp_rcv", "veth_poll"}},
	{"AF_XDP transmit", []string{"xsk_generic_xmit", "__xsk_sendmsg", "xsk_sendmsg", "xsk_build_skb"}},
	{"TUN read/write", []string{"tun_get_user", "tun_chr_write_iter", "tun_do_read", "tun_chr_read_iter", "tun_net_xmit"}},
	{"UDP/packet send", []string{"__sys_sendmmsg", "__sys_sendmsg", "__sys_sendto", "udp_sendmsg", "packet_sendmsg"}},
	{"UDP/packet receive", []string{"do_recvmmsg", "__sys_recvmsg", "__sys_recvfrom", "udp_recvmsg", "packet_recvmsg"}},
	{"kernel receive (softirq)", []string{"net_rx_action", "process_backlog", "__netif_receive_skb", "ip6_rcv", "ip_rcv"}},
	{"scheduling and waits", []string{"schedule", "futex", "epoll_wait", "do_sys_poll", "nanosleep", "runtime.usleep", "runtime.futex", "runtime.netpoll", "runtime.findRunnable"}},
	{"fips-go (Go, not AEAD)", []string{"github.com/fips-go/"}},
	{"Go runtime", []string{"runtime."}},
}

// OtherCategory counts what no category names.
const OtherCategory = "other"

// ProcessProfile is one process's samples by category.
type ProcessProfile struct {
	Pid     int
	Samples int
	// ByCategory counts samples per Category name (and OtherCategory).
	ByCategory map[string]int
}

// Share is the fraction of the process's samples in category c.
func (p ProcessProfile) Share(c string) float64 {
	if p.Samples == 0 {
		return 0
	}
	return float64(p.ByCategory[c]) / float64(p.Samples)
}

// MachineProfile is a whole `perf script` output: every process's
// profile and the machine's sample count (idle included).
type MachineProfile struct {
	Samples   int
	Processes map[int]*ProcessProfile
}

// ErrPerfScript is returned for `perf script` output that is not the
// "-F pid,ip,sym" shape.
var ErrPerfScript = errors.New("bench: perf script output")

// MaxPerfFrames bounds the frames read of one sample; deeper chains are
// cut (the categories sit near the leaf).
const MaxPerfFrames = 256

// ParsePerfScript reads `perf script -F pid,ip,sym` output: a line with
// the pid alone (right-aligned with spaces) starts a sample, tab-indented
// "ip sym" lines are its call chain from the leaf, and a blank line ends
// it.
func ParsePerfScript(r io.Reader) (MachineProfile, error) {
	m := MachineProfile{Processes: map[int]*ProcessProfile{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var (
		cur    *ProcessProfile
		frames []string
		line   int
	)
	end := func() {
		if cur != nil {
			cur.Samples++
			cur.ByCategory[categorize(frames)]++
		}
		cur, frames = nil, frames[:0]
	}
	for sc.Scan() {
		line++
		t := sc.Text()
		if strings.TrimSpace(t) == "" {
			end()
			continue
		}
		if t[0] != '\t' {
			end()
			pid, err := strconv.Atoi(strings.TrimSpace(t))
			if err != nil || pid < 0 {
				return m, fmt.Errorf("%w: line %d: want a pid, got %q", ErrPerfScript, line, t)
			}
			m.Samples++
			p := m.Processes[pid]
			if p == nil {
				p = &ProcessProfile{Pid: pid, ByCategory: map[string]int{}}
				m.Processes[pid] = p
			}
			cur = p
			continue
		}
		if cur == nil {
			return m, fmt.Errorf("%w: line %d: a frame before any sample", ErrPerfScript, line)
		}
		f := strings.Fields(t)
		if len(f) < 2 || len(frames) >= MaxPerfFrames {
			continue // an address without a symbol, or too deep
		}
		frames = append(frames, f[1])
	}
	end()
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("%w: %w", ErrPerfScript, err)
	}
	return m, nil
}

// categorize names the category of a call chain (leaf first): the
// innermost frame that names one decides.
func categorize(frames []string) string {
	for _, f := range frames {
		for _, c := range Categories {
			if slices.ContainsFunc(c.Frames, func(s string) bool { return strings.Contains(f, s) }) {
				return c.Name
			}
		}
	}
	return OtherCategory
}

// ProfileRow is one process of a profiled path in the report.
type ProfileRow struct {
	Node string // the node's role and name: "relay b", "sender a", …
	ProcessProfile
	// MachineShare is the process's share of all samples on the
	// machine (2 CPUs sampled: 0.5 is one CPU's worth).
	MachineShare float64
}

// ProfileMarkdown renders one path's profile: a row per process, a
// column per category that holds at least 1 % of some process.
func ProfileMarkdown(title string, rows []ProfileRow) string {
	var cats []string
	for _, c := range append(slices.Clone(Categories), Category{Name: OtherCategory}) {
		for _, r := range rows {
			if r.Share(c.Name) >= 0.01 {
				cats = append(cats, c.Name)
				break
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s\n\n| process | share of machine | samples |", title)
	for _, c := range cats {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n|---|---|---|")
	for range cats {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.0f %% | %d |", r.Node, 100*r.MachineShare, r.Samples)
		for _, c := range cats {
			fmt.Fprintf(&b, " %.1f %% |", 100*r.Share(c))
		}
		b.WriteString("\n")
	}
	return b.String()
}
