package udp

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

func pair(t *testing.T, network, addr string) (*net.UDPConn, *net.UDPConn) {
	t.Helper()
	a, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	for _, c := range []*net.UDPConn{a, b} {
		_ = c.SetReadBuffer(4 << 20)
	}
	return a, b
}

// datagram i is size bytes of a pattern naming i.
func datagram(i, size int) []byte {
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(i*7 + j)
	}
	b[0] = byte(i)
	return b
}

// receive reads until want datagrams arrived (each split out of GRO runs)
// or the deadline passes.
func receive(t *testing.T, c *Conn, raw *net.UDPConn, want int) [][]byte {
	t.Helper()
	ms := make([]Message, 8)
	for i := range ms {
		ms[i].Buf = make([]byte, MaxMessage)
	}
	var got [][]byte
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < want {
		n, _, err := c.ReadBatch(ms)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), want, err)
		}
		for i := range n {
			if ms[i].Trunc {
				t.Fatalf("message %d truncated", i)
			}
			if runtime.GOOS == "linux" {
				if age := time.Since(time.Unix(0, ms[i].Stamp)); ms[i].Stamp == 0 || age < 0 || age > 10*time.Second {
					t.Fatalf("message %d: kernel arrival stamp %d (%v ago)", i, ms[i].Stamp, age)
				}
			}
			ms[i].Split(func(b []byte) { got = append(got, bytes.Clone(b)) })
		}
	}
	return got
}

func TestSendQueueCoalescesRunsAndReceiveSplitsThem(t *testing.T) {
	for _, fam := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}} {
		t.Run(fam.network, func(t *testing.T) {
			ra, rb := pair(t, fam.network, fam.addr)
			a, err := Open(ra, 16)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Open(rb, 16)
			if err != nil {
				t.Fatal(err)
			}
			to := rb.LocalAddr().(*net.UDPAddr).AddrPort()
			q := NewSendQueue(a, 16, 1400)
			// A run of 40 equal datagrams and a short last one to one
			// address: one message with GSO.
			var sent [][]byte
			for i := range 41 {
				size := 1200
				if i == 40 {
					size = 300
				}
				d := datagram(i, size)
				sent = append(sent, d)
				if _, err := q.Add(to, d); err != nil {
					t.Fatal(err)
				}
			}
			if a.GSO() && q.Len() != 1 {
				t.Errorf("GSO socket: %d messages for one run, want 1", q.Len())
			}
			if q.Datagrams != 41 {
				t.Errorf("queue holds %d datagrams, want 41", q.Datagrams)
			}
			// After the short datagram a new message starts.
			d := datagram(41, 1200)
			sent = append(sent, d)
			if _, err := q.Add(to, d); err != nil {
				t.Fatal(err)
			}
			if a.GSO() && q.Len() != 2 {
				t.Errorf("a datagram after a short one joined its run (%d messages)", q.Len())
			}
			n, err := q.Flush()
			if err != nil || n != len(sent) {
				t.Fatalf("Flush = %d, %v; want %d", n, err, len(sent))
			}
			if q.Len() != 0 || q.Datagrams != 0 {
				t.Fatalf("queue not empty after Flush")
			}
			got := receive(t, b, rb, len(sent))
			if len(got) != len(sent) {
				t.Fatalf("received %d datagrams, want %d", len(got), len(sent))
			}
			for i := range sent {
				if !bytes.Equal(got[i], sent[i]) {
					t.Fatalf("datagram %d: %d bytes, first %x; want %d bytes, first %x", i, len(got[i]), got[i][0], len(sent[i]), sent[i][0])
				}
			}
			t.Logf("GSO %v, GRO %v", a.GSO(), b.GRO())
		})
	}
}

func TestSendQueueStartsANewMessagePerAddressAndBound(t *testing.T) {
	ra, rb := pair(t, "udp4", "127.0.0.1:0")
	_, rc := pair(t, "udp4", "127.0.0.1:0")
	a, err := Open(ra, 4)
	if err != nil {
		t.Fatal(err)
	}
	to1 := rb.LocalAddr().(*net.UDPAddr).AddrPort()
	to2 := rc.LocalAddr().(*net.UDPAddr).AddrPort()
	q := NewSendQueue(a, 4, 1400)
	for i, to := range []netip.AddrPort{to1, to2, to1, to2} {
		full, err := q.Add(to, datagram(i, 100))
		if err != nil {
			t.Fatal(err)
		}
		if full != (i == 3) {
			t.Errorf("after %d adds full = %v", i+1, full)
		}
	}
	if q.Len() != 4 {
		t.Errorf("alternating addresses: %d messages, want 4", q.Len())
	}
	if _, err := q.Add(to1, datagram(9, 100)); err != ErrQueueFull {
		t.Errorf("Add to a full queue (new message needed): %v", err)
	}
	// An IPv6 destination on an IPv4 socket is refused, not a panic.
	q2 := NewSendQueue(a, 4, 1400)
	if _, err := q2.Add(netip.MustParseAddrPort("[2001:db8::1]:9"), datagram(1, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := q2.Add(to1, datagram(2, 10)); err != nil {
		t.Fatal(err)
	}
	if n, err := q2.Flush(); n != 1 || err == nil {
		t.Errorf("Flush with one unsendable address = %d, %v; want 1 sent and an error", n, err)
	}
	if _, err := q.Add(to1, make([]byte, MaxMessage+1)); err != ErrTooLarge {
		t.Errorf("oversize datagram: %v", err)
	}
	if n, err := q.Flush(); n != 4 || err != nil {
		t.Fatalf("Flush = %d, %v", n, err)
	}
}

func TestBatchIOAllocatesNothing(t *testing.T) {
	ra, rb := pair(t, "udp4", "127.0.0.1:0")
	a, _ := Open(ra, 8)
	b, _ := Open(rb, 8)
	to := rb.LocalAddr().(*net.UDPAddr).AddrPort()
	q := NewSendQueue(a, 8, 1400)
	pkt := datagram(1, 1000)
	ms := make([]Message, 8)
	for i := range ms {
		ms[i].Buf = make([]byte, MaxMessage)
	}
	allocs := testing.AllocsPerRun(200, func() {
		for range 4 {
			if _, err := q.Add(to, pkt); err != nil {
				panic(err)
			}
		}
		if _, err := q.Flush(); err != nil {
			panic(err)
		}
		got := 0
		for got < 4 {
			n, _, err := b.ReadBatch(ms)
			if err != nil {
				panic(err)
			}
			for i := range n {
				ms[i].Split(func([]byte) { got++ })
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch of 4 sent and received", allocs)
	}
}

func TestSplit(t *testing.T) {
	buf := make([]byte, 100)
	for _, c := range []struct {
		n, seg int
		want   string
	}{{0, 0, "[0]"}, {10, 0, "[10]"}, {10, 10, "[10]"}, {25, 10, "[10 10 5]"}, {30, 10, "[10 10 10]"}, {5, 10, "[5]"}} {
		m := Message{Buf: buf, N: c.n, Segment: c.seg}
		var sizes []int
		m.Split(func(b []byte) { sizes = append(sizes, len(b)) })
		if got := fmt.Sprint(sizes); got != c.want {
			t.Errorf("Split(n=%d, seg=%d) = %s, want %s", c.n, c.seg, got, c.want)
		}
	}
}
