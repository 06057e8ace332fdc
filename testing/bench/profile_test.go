package bench

import (
	"errors"
	"strings"
	"testing"
)

// A perf script excerpt: an AEAD leaf, a memcpy inside the AF_XDP
// receive, a sample of another process, one with no named frame and an
// idle one.
const perfSample = `101 
	           903f3 golang.org/x/crypto/chacha20poly1305.chacha20Poly1305Open.abi0
	          5a1a99 github.com/fips-go/fips/dataplane.(*Worker).Receive

101 
	ffffffff8225f759 __pi_memcpy
	ffffffff8225f681 __xsk_rcv
	ffffffff813ae452 veth_xdp_rcv_skb
	ffffffff822656c4 net_rx_action

202 
	ffffffff8225f759 _raw_spin_unlock_irqrestore
	ffffffff8225f681 sock_wfree
	ffffffff813ae452 skb_pp_cow_data
	ffffffff822656c4 veth_xdp_rcv_skb

101 
	            b7ae [unknown]

    0 
	ffffffff8225f759 pvm_safe_halt_hc
`

func TestParsePerfScriptCategorizes(t *testing.T) {
	m, err := ParsePerfScript(strings.NewReader(perfSample))
	if err != nil {
		t.Fatal(err)
	}
	if m.Samples != 5 || len(m.Processes) != 3 {
		t.Fatalf("samples %d processes %d, want 5 and 3", m.Samples, len(m.Processes))
	}
	p := m.Processes[101]
	if p.Samples != 3 {
		t.Fatalf("pid 101: %d samples, want 3", p.Samples)
	}
	want := map[string]int{"AEAD (ChaCha20-Poly1305)": 1, "AF_XDP receive (copy into UMEM)": 1, OtherCategory: 1}
	for c, n := range want {
		if p.ByCategory[c] != n {
			t.Errorf("pid 101 %q: %d, want %d (%v)", c, p.ByCategory[c], n, p.ByCategory)
		}
	}
	if got := m.Processes[202].ByCategory["veth XDP receive (skb copied for XDP)"]; got != 1 {
		t.Errorf("pid 202: the cow copy under veth_xdp_rcv_skb counted %d, want 1 (%v)", got, m.Processes[202].ByCategory)
	}
	if s := p.Share("AEAD (ChaCha20-Poly1305)"); s < 0.33 || s > 0.34 {
		t.Errorf("share %v, want 1/3", s)
	}
	md := ProfileMarkdown("t", []ProfileRow{{Node: "relay b", ProcessProfile: *p, MachineShare: 0.6}})
	for _, s := range []string{"| relay b | 60 % | 3 |", "AEAD (ChaCha20-Poly1305)", "33.3 %"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	if strings.Contains(md, "TUN read/write") {
		t.Errorf("markdown shows an empty category:\n%s", md)
	}
}

func TestParsePerfScriptRejects(t *testing.T) {
	for _, in := range []string{"\tdeadbeef sym\n", "abc\n\tdeadbeef sym\n", "-3\n"} {
		if _, err := ParsePerfScript(strings.NewReader(in)); !errors.Is(err, ErrPerfScript) {
			t.Errorf("%q: %v, want ErrPerfScript", in, err)
		}
	}
}

func FuzzParsePerfScript(f *testing.F) {
	f.Add(perfSample)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParsePerfScript(strings.NewReader(s))
		if err != nil {
			return
		}
		n := 0
		for _, p := range m.Processes {
			n += p.Samples
			sum := 0
			for _, c := range p.ByCategory {
				sum += c
			}
			if sum != p.Samples {
				t.Fatalf("pid %d: categories sum to %d of %d samples", p.Pid, sum, p.Samples)
			}
		}
		if n != m.Samples {
			t.Fatalf("processes hold %d of %d samples", n, m.Samples)
		}
	})
}
