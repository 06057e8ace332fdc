//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fips-go/fips/testing/netns"
)

// plan is every row, in the order they run.
func plan(e *env) []row {
	var rows []row
	for _, p := range Perms(3) {
		rows = append(rows, lineRow(p))
	}
	for _, base := range []Impl{G, U} {
		for _, joiner := range []Impl{base.Other(), base} {
			rows = append(rows, lateJoinerRow(base, joiner))
		}
	}
	rows = append(rows, mixedMeshRow(10, 5, e))
	for _, victim := range []Impl{G, U} {
		rows = append(rows, killRow(victim))
	}
	for _, sender := range []Impl{G, U} {
		rows = append(rows, rekeyRow(sender))
	}
	for _, kind := range []string{"tcp", "ethernet"} {
		for _, dialer := range []Impl{G, U} {
			rows = append(rows, linkRow(kind, dialer))
		}
	}
	for _, mode := range relayModes() {
		rows = append(rows, relayRow(mode))
	}
	return rows
}

// firstContact is how long the first ping by name may take.
const firstContact = 10 * time.Second

// untilReply pings addr from node by name until an echo reply comes,
// pinging again after an ICMP error (Destination Unreachable while no
// bloom filter holds a new node yet, say); it returns how long that took
// from the first ping and how many pings it took, and fails the row
// after timeout.
func untilReply(c *rowCtx, m *netns.Mesh, from *netns.Node, addr string, timeout time.Duration) (time.Duration, int) {
	start := time.Now()
	for tries := 1; ; tries++ {
		c.check()
		_, out, err := netns.FirstReply(m, from, addr, timeout-time.Since(start))
		if err == nil {
			took := time.Since(start)
			c.Logf("first echo reply %s → %s after %s (ping %d)", from.Name, addr, Ms(took), tries)
			return took, tries
		}
		if time.Since(start)+200*time.Millisecond >= timeout {
			c.Fatalf("no echo reply from %s to %s within %v (%d pings): %v", addr, from.Name, timeout, tries, err)
		}
		c.Logf("ping %d %s → %s: %s", tries, from.Name, addr, icmpLine(string(out)))
		time.Sleep(200 * time.Millisecond)
	}
}

// icmpLine is the first line of ping's output about a request
// (icmp_seq), else its last line.
func icmpLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "icmp_seq") {
			return clip(strings.TrimSpace(l), 160)
		}
	}
	return lastLine(out)
}

// name is a node's .fips name.
func name(n *netns.Node) string { return n.Npub() + ".fips" }

// lineRow: A–B–C of the given implementations, with TUN and DNS on each.
// From A: dig C's name at A's responder, ping C by name (the time to the
// first reply is the figure), iperf3 to C for 3 s, curl an HTTP server
// on C by name; then C pings A by name.
func lineRow(seq []Impl) row {
	return row{scenario: "line A–B–C", impls: Join(seq, "-"), body: func(c *rowCtx) string {
		m := c.mesh(netns.Options{IPv6: true})
		a, b, cn := c.node(m, "a", seq[0], ""), c.node(m, "b", seq[1], ""), c.node(m, "c", seq[2], "")
		m.Link(a, b)
		m.Link(b, cn)
		m.Start()
		m.WaitConverged(30 * time.Second)
		addr := netns.Resolve(c, m, a, cn)
		first := netns.WaitReply(c, m, a, name(cn), firstContact)
		c.check()
		defer netns.IperfServer(c, m, cn)()
		bps := netns.Iperf(c, m, "a", addr, 3)
		netns.FetchHTTP(c, m, a, cn)
		back := netns.WaitReply(c, m, cn, name(a), firstContact)
		return fmt.Sprintf("A→C first ping %s, %s, curl 200, C→A %s", Ms(first), Mbit(bps), Ms(back))
	}}
}

// lateJoinerRow: a settled line A–B–C of base, then J of joiner links to
// C as a leaf (only J names C). From the moment the J–C link is up, A, B
// and C in turn ping J by name, each its first contact with J; each
// must answer within firstContact.
func lateJoinerRow(base, joiner Impl) row {
	return row{scenario: "late joiner", impls: Join([]Impl{base, base, base}, "-") + " + " + joiner.String(), body: func(c *rowCtx) string {
		m := c.mesh(netns.Options{IPv6: true})
		a, b, cn := c.node(m, "a", base, ""), c.node(m, "b", base, ""), c.node(m, "c", base, "")
		m.Link(a, b)
		m.Link(b, cn)
		m.Start()
		m.WaitConverged(30 * time.Second)
		j := c.node(m, "j", joiner, "")
		m.LinkOneWay(j, cn)
		m.StartNode(j)
		up := waitPeers(c, [][2]*netns.Node{{j, cn}}, 20*time.Second)
		var firsts []string
		for _, n := range []*netns.Node{a, b, cn} {
			took, pings := untilReply(c, m, n, name(j), firstContact)
			f := fmt.Sprintf("%s %s", strings.ToUpper(n.Name), Ms(took))
			if pings > 1 {
				f += fmt.Sprintf(" (%d pings)", pings)
			}
			firsts = append(firsts, f)
		}
		return fmt.Sprintf("link up %s after start; first reply from %s", Ms(up), strings.Join(firsts, ", "))
	}}
}

// probeIdleSecs is node.session.idle_timeout_secs in the random mesh: a
// probe tears down only its own end of the session it opened, and a
// probe back from the other end would find that end's half and, with no
// session at the far end to report, fail its rtt stage (no_report) —
// so the reverse probes wait until every half has idled out.
const probeIdleSecs = 5

// mixedMeshRow: n nodes of a random connected graph (seeded, n−1+extra
// links) with random implementations; every node probes every other
// with its own implementation's `fipsctl probe --json`, which must end
// overall ok. The probes run in rounds of disjoint pairs, one way, then,
// once no session is left anywhere, the other way.
func mixedMeshRow(n, extra int, e *env) row {
	g := RandomMesh(n, extra, e.seed)
	impls := fmt.Sprintf("%d nodes %s, %d links, seed %d", n, g.Count(), len(g.Edges), e.seed)
	return row{scenario: "random mesh", impls: impls, body: func(c *rowCtx) string {
		m := c.mesh(netns.Options{NodeConfig: fmt.Sprintf("  session: { idle_timeout_secs: %d }\n", probeIdleSecs)})
		nodes := make([]*netns.Node, n)
		for k := range nodes {
			nodes[k] = c.node(m, fmt.Sprintf("n%d%s", k, g.Impls[k]), g.Impls[k], "")
		}
		for _, ed := range g.Edges {
			m.Link(nodes[ed[0]], nodes[ed[1]])
		}
		m.Start()
		conv := m.WaitConverged(60 * time.Second)
		var failed []string
		var rtts []float64
		probeStart := time.Now()
		for phase := range 2 {
			if phase == 1 {
				waitNoSessions(c, nodes, 3*probeIdleSecs*time.Second)
			}
			for _, round := range RoundRobin(n) {
				c.check()
				rtt := make([]float64, len(round))
				errs := make([]error, len(round))
				var wg sync.WaitGroup
				for k, p := range round {
					from, to := nodes[p[0]], nodes[p[1]]
					if phase == 1 {
						from, to = to, from
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						rtt[k], errs[k] = probe(m, from, to)
						c.Logf("probe %s → %s: rtt %.1f ms, %v", from.Name, to.Name, rtt[k], errs[k])
					}()
				}
				wg.Wait()
				for k, p := range round {
					if errs[k] != nil {
						from, to := nodes[p[0]], nodes[p[1]]
						if phase == 1 {
							from, to = to, from
						}
						failed = append(failed, fmt.Sprintf("%s→%s: %v", from.Name, to.Name, errs[k]))
					} else {
						rtts = append(rtts, rtt[k])
					}
				}
			}
		}
		want := n * (n - 1)
		if len(failed) > 0 {
			c.Fatalf("%d of %d ordered pairs failed to probe: %s", len(failed), want, strings.Join(failed, "; "))
		}
		sort.Float64s(rtts)
		return fmt.Sprintf("%d/%d pairs probe ok (%s), rtt median %.1f ms max %.1f ms; converged in %s",
			len(rtts), want, Seconds(time.Since(probeStart)), rtts[len(rtts)/2], rtts[len(rtts)-1], Seconds(conv))
	}}
}

// waitNoSessions waits until no node lists a session.
func waitNoSessions(c *rowCtx, nodes []*netns.Node, timeout time.Duration) {
	start := time.Now()
	for {
		c.check()
		left := 0
		for _, n := range nodes {
			var v struct {
				Sessions []json.RawMessage `json:"sessions"`
			}
			if err := n.Call("show_sessions", nil, &v); err != nil {
				c.Fatalf("%s: show_sessions: %v", n.Name, err)
			}
			left += len(v.Sessions)
		}
		if left == 0 {
			c.Logf("no session left after %s", Seconds(time.Since(start)))
			return
		}
		if time.Since(start) > timeout {
			c.Fatalf("%d sessions still up %s after the probes", left, Seconds(timeout))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// probe runs `fipsctl probe --json` of from's implementation against to
// and returns the report's RTT; an error unless overall is ok.
func probe(m *netns.Mesh, from, to *netns.Node) (float64, error) {
	out, err := m.Fipsctl(from.Name, "probe", "--json", to.Npub())
	var rep struct {
		Overall string `json:"overall"`
		RTT     struct {
			RTTMs *float64 `json:"rtt_ms"`
		} `json:"rtt"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		return 0, fmt.Errorf("%v (%s)", err, clip(strings.TrimSpace(string(out)), 80))
	}
	if err != nil || rep.Overall != "ok" {
		var stages map[string]json.RawMessage
		_ = json.Unmarshal(out, &stages)
		why := []string{"overall " + rep.Overall}
		for _, s := range []string{"bloom", "discovery", "path", "session", "rtt"} {
			var st struct {
				Verdict string  `json:"verdict"`
				Reason  *string `json:"reason"`
			}
			if json.Unmarshal(stages[s], &st) == nil && st.Verdict != "ok" && st.Verdict != "" {
				r := ""
				if st.Reason != nil {
					r = " " + *st.Reason
				}
				why = append(why, fmt.Sprintf("%s %s%s", s, st.Verdict, r))
			}
		}
		return 0, fmt.Errorf("%s", strings.Join(why, ", "))
	}
	if rep.RTT.RTTMs == nil {
		return 0, fmt.Errorf("overall ok without an rtt")
	}
	return *rep.RTT.RTTMs, nil
}

// peerView is the part of show_peers the harness reads (upstream's
// field names).
type peerView struct {
	Npub            string `json:"npub"`
	TransportType   string `json:"transport_type"`
	OurSessionIndex string `json:"our_session_index"`
	CurrentKBit     bool   `json:"current_k_bit"`
}

// peers is n's show_peers by npub (nil when the daemon does not answer).
func peers(n *netns.Node) map[string]peerView {
	var v struct {
		Peers []peerView `json:"peers"`
	}
	if err := n.Call("show_peers", nil, &v); err != nil {
		return nil
	}
	out := map[string]peerView{}
	for _, p := range v.Peers {
		out[p.Npub] = p
	}
	return out
}

// sessionView is the part of show_sessions the harness reads.
type sessionView struct {
	Npub           string `json:"npub"`
	State          string `json:"state"`
	SessionStartMs *int64 `json:"session_start_ms"`
	CurrentKBit    bool   `json:"current_k_bit"`
}

// session is n's show_sessions entry for peer (zero without one).
func session(n, peer *netns.Node) sessionView {
	var v struct {
		Sessions []sessionView `json:"sessions"`
	}
	if err := n.Call("show_sessions", nil, &v); err != nil {
		return sessionView{}
	}
	for _, s := range v.Sessions {
		if s.Npub == peer.Npub() {
			return s
		}
	}
	return sessionView{}
}

// waitPeers waits until both ends of every pair list each other in
// show_peers and returns how long that took; it fails the row after
// timeout.
func waitPeers(c *rowCtx, pairs [][2]*netns.Node, timeout time.Duration) time.Duration {
	start := time.Now()
	for {
		c.check()
		up := true
		for _, p := range pairs {
			_, ab := peers(p[0])[p[1].Npub()]
			_, ba := peers(p[1])[p[0].Npub()]
			up = up && ab && ba
		}
		if up {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			c.Fatalf("link %s–%s not up on both ends after %v", pairs[0][0].Name, pairs[0][1].Name, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killRow: a g–u link with a session; victim's daemon is killed with
// SIGKILL and started again with the same identity. The link must come
// back on both ends, the survivor's ping by name must reach the
// restarted node (a new session), and the restarted node's ping back.
func killRow(victim Impl) row {
	return row{scenario: "kill -9 restart", impls: "g-u, kill " + victim.String(), body: func(c *rowCtx) string {
		m := c.mesh(netns.Options{IPv6: true})
		g, u := c.node(m, "g", G, ""), c.node(m, "u", U, "")
		m.Link(g, u)
		m.Start()
		m.WaitConverged(30 * time.Second)
		netns.WaitReply(c, m, g, name(u), firstContact)
		netns.WaitReply(c, m, u, name(g), firstContact)
		v, s := g, u
		if victim == U {
			v, s = u, g
		}
		v.Kill()
		start := time.Now()
		v.Restart()
		up := waitPeers(c, [][2]*netns.Node{{v, s}}, 30*time.Second)
		_, pings := untilReply(c, m, s, name(v), 20*time.Second)
		fromSurvivor := time.Since(start)
		tries := ""
		if pings > 1 {
			tries = fmt.Sprintf(" (%d pings)", pings)
		}
		back := netns.WaitReply(c, m, v, name(s), firstContact)
		for _, p := range [][2]*netns.Node{{v, s}, {s, v}} {
			if st := session(p[0], p[1]).State; st != "established" {
				c.Fatalf("%s's session with %s after the restart: %q", p[0].Name, p[1].Name, st)
			}
		}
		return fmt.Sprintf("link back %s after restart, %s→%s reply %s after restart%s, %s→%s %s",
			Ms(up), s.Name, v.Name, Ms(fromSurvivor), tries, v.Name, s.Name, Ms(back))
	}}
}

// rekeyAfterSecs is node.rekey.after_secs for the rekey rows: upstream's
// smallest (it must exceed the ±15 s per-session jitter). Under iperf3
// the send counters reach node.rekey.after_messages (65536) within
// seconds, so the session rekeys every few seconds. A link rekeys only
// once its session is 30 s old: a peer's msg1 before that is a
// duplicate, not a rekey, and the initiator resends it 1, 3, 7, 15 and
// 31 s after the first (while both sides initiate, the smaller NodeAddr's
// msg1 is the one answered), so the first link rekey can take until 46 s
// or so; the load runs rekeySecs from the first ping.
const (
	rekeyAfterSecs = 16
	rekeySecs      = 50
	// maxStall is the longest iperf3 may move next to nothing.
	maxStall = 2 * time.Second
)

// rekeyRow: a g–u link with short rekey intervals; iperf3 TCP from
// sender's node to the other for rekeySecs while show_peers'
// our_session_index / current_k_bit (link) and show_sessions'
// session_start_ms / current_k_bit (session) are polled on both: each
// side must see both layers rekey, and no run of 0.5 s iperf3 intervals
// may stall longer than maxStall.
func rekeyRow(sender Impl) row {
	return row{scenario: "rekey under load", impls: fmt.Sprintf("%s→%s", sender, sender.Other()), body: func(c *rowCtx) string {
		m := c.mesh(netns.Options{IPv6: true, NodeConfig: fmt.Sprintf("  rekey: { after_secs: %d }\n", rekeyAfterSecs)})
		s := c.node(m, "s"+sender.String(), sender, "")
		r := c.node(m, "r"+sender.Other().String(), sender.Other(), "")
		m.Link(s, r)
		m.Start()
		m.WaitConverged(30 * time.Second)
		addr := netns.Resolve(c, m, s, r)
		netns.WaitReply(c, m, s, addr, firstContact)
		defer netns.IperfServer(c, m, r)()

		type state struct{ link, sess string }
		read := func(n, peer *netns.Node) state {
			p := peers(n)[peer.Npub()]
			se := session(n, peer)
			start := int64(0)
			if se.SessionStartMs != nil {
				start = *se.SessionStartMs
			}
			return state{fmt.Sprint(p.OurSessionIndex, p.CurrentKBit), fmt.Sprint(start, se.CurrentKBit)}
		}
		nodes := [][2]*netns.Node{{s, r}, {r, s}}
		last := map[string]state{}
		links, sessions := map[string]int{}, map[string]int{}
		for _, p := range nodes {
			last[p[0].Name] = read(p[0], p[1])
		}
		type result struct {
			out []byte
			err error
		}
		done := make(chan result, 1)
		go func() {
			out, err := m.Exec(s.Name, "iperf3", "-c", addr, "-t", fmt.Sprint(rekeySecs), "-i", "0.5", "-J")
			done <- result{out, err}
		}()
		loadStart, firstLink := time.Now(), time.Duration(0)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		var res result
	poll:
		for {
			select {
			case res = <-done:
				break poll
			case <-c.ctx.Done():
				c.check()
			case <-tick.C:
				for _, p := range nodes {
					now := read(p[0], p[1])
					was := last[p[0].Name]
					if now.link != was.link && was.link != "" {
						links[p[0].Name]++
						if firstLink == 0 {
							firstLink = time.Since(loadStart)
						}
					}
					if now.sess != was.sess && was.sess != "" {
						sessions[p[0].Name]++
					}
					last[p[0].Name] = now
				}
			}
		}
		var rep struct {
			Intervals []struct {
				Sum struct {
					Bytes   float64 `json:"bytes"`
					Seconds float64 `json:"seconds"`
				} `json:"sum"`
			} `json:"intervals"`
			End struct {
				SumReceived struct {
					BitsPerSecond float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			} `json:"end"`
			Error string `json:"error"`
		}
		if jerr := json.Unmarshal(res.out, &rep); res.err != nil || jerr != nil || rep.Error != "" {
			c.Fatalf("iperf3: %v %v %s", res.err, jerr, rep.Error)
		}
		var bytes []float64
		for _, iv := range rep.Intervals {
			bytes = append(bytes, iv.Sum.Bytes)
		}
		stall := LongestStall(bytes, 500*time.Millisecond)
		figure := fmt.Sprintf("link rekeys %s %d / %s %d (first at %s), session %d / %d, %s, longest stall %s",
			s.Name, links[s.Name], r.Name, links[r.Name], Seconds(firstLink), sessions[s.Name], sessions[r.Name],
			Mbit(rep.End.SumReceived.BitsPerSecond), Seconds(stall))
		c.Logf("%s", figure)
		if stall > maxStall {
			c.Fatalf("iperf3 stalled for %s (more than %s): %s", Seconds(stall), Seconds(maxStall), figure)
		}
		if slices.Contains([]int{links[s.Name], links[r.Name], sessions[s.Name], sessions[r.Name]}, 0) {
			c.Fatalf("a side saw no link or no session rekey: %s", figure)
		}
		return figure
	}}
}

// linkRow: a g–u link over transports.<kind>, dialled by dialer's node
// only; both ends must list the other with that transport_type, ping
// each other by name, and carry iperf3 for 3 s. kind "tcp", or
// "ethernet": AF_PACKET on the veth ends (EtherType 0x2121), the dialler
// naming the other by upstream's iface/mac address — frames byte for
// byte as upstream's.
func linkRow(kind string, dialer Impl) row {
	return row{scenario: kind + " link", impls: fmt.Sprintf("%s dials %s", dialer, dialer.Other()), body: func(c *rowCtx) string {
		m := c.mesh(netns.Options{IPv6: true, Transport: kind})
		d := c.node(m, "d"+dialer.String(), dialer, "")
		a := c.node(m, "a"+dialer.Other().String(), dialer.Other(), "")
		m.LinkOneWay(d, a)
		m.Start()
		m.WaitConverged(30 * time.Second)
		for _, p := range [][2]*netns.Node{{d, a}, {a, d}} {
			if tt := peers(p[0])[p[1].Npub()].TransportType; tt != kind {
				c.Fatalf("%s lists %s with transport_type %q, want %s", p[0].Name, p[1].Name, tt, kind)
			}
		}
		first := netns.WaitReply(c, m, d, name(a), firstContact)
		back := netns.WaitReply(c, m, a, name(d), firstContact)
		defer netns.IperfServer(c, m, a)()
		bps := netns.Iperf(c, m, d.Name, a.IPv6(), 3)
		return fmt.Sprintf("first ping %s, back %s, %s", Ms(first), Ms(back), Mbit(bps))
	}}
}

// relayDataplanes are the fips-go relay's dataplane sections, a row
// each: every dataplane.mode, and xdp with AF_XDP receive and transmit.
var relayDataplanes = []string{
	"{ mode: auto }",
	"{ mode: userspace }",
	"{ mode: xdp }",
	"{ mode: xdp, afxdp: true }",
	"{ mode: xdp, afxdp: true, afxdp_transmit: xsk }",
}

// relayMode is one of relayDataplanes, read.
type relayMode struct {
	flow          string
	Mode          string `yaml:"mode"`
	AFXDP         bool   `yaml:"afxdp"`
	AFXDPTransmit string `yaml:"afxdp_transmit"`
}

func relayModes() []relayMode {
	var out []relayMode
	for _, flow := range relayDataplanes {
		m := relayMode{flow: flow}
		if err := yaml.Unmarshal([]byte(flow), &m); err != nil {
			panic(fmt.Sprintf("relay dataplane %q: %v", flow, err))
		}
		out = append(out, m)
	}
	return out
}

func (r relayMode) name() string {
	switch {
	case r.AFXDPTransmit == "xsk":
		return "afxdp-xsk"
	case r.AFXDP:
		return "afxdp"
	}
	return r.Mode
}

// config is the relay's dataplane section.
func (r relayMode) config() string { return "dataplane: " + r.flow + "\n" }

// runs is the mode show_status must report ("" for auto: either).
func (r relayMode) runs() string {
	if r.Mode == "auto" {
		return ""
	}
	return r.Mode
}

// relayRow: u–g–u with the fips-go relay in a dataplane mode; A pings C
// by name through it and runs iperf3 for 3 s. A mode this kernel cannot
// run is skipped, saying why; auto runs whichever it picks.
func relayRow(mode relayMode) row {
	return row{scenario: "relay " + mode.name(), impls: "u-g-u", body: func(c *rowCtx) string {
		m := c.mesh(netns.Options{IPv6: true})
		a, b, cn := c.node(m, "a", U, ""), c.node(m, "b", G, mode.config()), c.node(m, "c", U, "")
		m.Link(a, b)
		m.Link(b, cn)
		m.Start()
		var dp struct {
			Mode   string `json:"mode"`
			Reason string `json:"reason"`
			AFXDP  struct {
				Enabled bool   `json:"enabled"`
				Reason  string `json:"reason"`
			} `json:"afxdp"`
			Engine struct {
				Forwarded uint64 `json:"forwarded"`
			} `json:"engine"`
		}
		status := func() bool {
			var st struct {
				State     string          `json:"state"`
				Dataplane json.RawMessage `json:"dataplane"`
			}
			return b.Call("show_status", nil, &st) == nil && st.State == "running" && json.Unmarshal(st.Dataplane, &dp) == nil
		}
		for deadline := time.Now().Add(15 * time.Second); !status(); time.Sleep(100 * time.Millisecond) {
			c.check()
			if !b.Running() {
				c.Skipf("the relay exited: %s", lastLine(b.Logs()))
			}
			if time.Now().After(deadline) {
				c.Fatalf("the relay's show_status did not answer running within 15 s")
			}
		}
		if mode.runs() != "" && dp.Mode != mode.runs() {
			c.Skipf("the relay runs %s: %s", dp.Mode, dp.Reason)
		}
		if dp.AFXDP.Enabled != mode.AFXDP {
			c.Skipf("AF_XDP enabled %v: %s", dp.AFXDP.Enabled, dp.AFXDP.Reason)
		}
		c.Logf("relay dataplane: %s; %s", dp.Reason, dp.AFXDP.Reason)
		m.WaitConverged(30 * time.Second)
		first := netns.WaitReply(c, m, a, name(cn), firstContact)
		defer netns.IperfServer(c, m, cn)()
		bps := netns.Iperf(c, m, "a", cn.IPv6(), 3)
		return fmt.Sprintf("A→C first ping %s, %s; the relay runs %s", Ms(first), Mbit(bps), dp.Mode)
	}}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return clip(lines[len(lines)-1], 120)
}
