package transport

import (
	"testing"
	"time"
)

func TestNeighboursDedupAndTake(t *testing.T) {
	// Upstream's test_neighbor_buffer and test_neighbor_buffer_dedup.
	t0 := time.Unix(1000, 0)
	n := NewNeighbours(4, time.Minute)
	a := AddrFromMAC(MAC{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff})
	b := AddrFromMAC(MAC{2, 0, 0, 0, 0, 1})
	k1, k2 := [32]byte{1}, [32]byte{2}
	if !n.Add(t0, a, k1) || !n.Add(t0, b, k1) || !n.Add(t0.Add(time.Second), a, k2) {
		t.Fatal("add refused")
	}
	got := n.Take(t0.Add(2*time.Second), nil)
	if len(got) != 2 || got[0].Addr != b || got[1].Addr != a || got[1].Key != k2 || !got[1].Seen.Equal(t0.Add(time.Second)) {
		t.Fatalf("take = %+v; want b then a with the latest key", got)
	}
	if got := n.Take(t0, nil); len(got) != 0 {
		t.Fatalf("second take = %+v, want empty", got)
	}
}

func TestNeighboursBoundAndExpiry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	n := NewNeighbours(2, 10*time.Second)
	mac := func(i byte) Addr { return AddrFromMAC(MAC{2, 0, 0, 0, 0, i}) }
	n.Add(t0, mac(1), [32]byte{})
	n.Add(t0.Add(5*time.Second), mac(2), [32]byte{})
	if n.Add(t0.Add(6*time.Second), mac(3), [32]byte{}) || n.Refused != 1 {
		t.Fatalf("third address admitted into a buffer of 2 (refused %d)", n.Refused)
	}
	if !n.Add(t0.Add(6*time.Second), mac(2), [32]byte{9}) {
		t.Fatal("a known address was refused when full")
	}
	// mac(1) is now older than 10 s: it expires to make room.
	if !n.Add(t0.Add(11*time.Second), mac(3), [32]byte{}) || n.Expired != 1 {
		t.Fatalf("expired entry not replaced (expired %d)", n.Expired)
	}
	got := n.Take(t0.Add(17*time.Second), nil)
	if len(got) != 1 || got[0].Addr != mac(3) || n.Expired != 2 {
		t.Fatalf("take = %+v (expired %d); want mac 3 alone", got, n.Expired)
	}
	if n.Len() != 0 {
		t.Fatalf("len %d after take", n.Len())
	}
	if m := NewNeighbours(0, 0); m.max != 1 {
		t.Fatalf("limit 0 clamps to %d, want 1", m.max)
	}
	never := NewNeighbours(1, 0)
	never.Add(t0, mac(1), [32]byte{})
	if got := never.Take(t0.Add(1000*time.Hour), nil); len(got) != 1 {
		t.Fatal("expiry 0 expired an entry")
	}
}

func TestNeighboursAddAllocs(t *testing.T) {
	n := NewNeighbours(8, time.Minute)
	t0 := time.Unix(1000, 0)
	a := AddrFromMAC(MAC{2, 0, 0, 0, 0, 1})
	dst := make([]Neighbour, 0, 8)
	if allocs := testing.AllocsPerRun(100, func() {
		n.Add(t0, a, [32]byte{})
		dst = n.Take(t0, dst[:0])
	}); allocs != 0 {
		t.Fatalf("Add+Take allocate %v times", allocs)
	}
}

func TestMAC(t *testing.T) {
	// Upstream's test_format_mac*, test_parse_mac_string*.
	m := MAC{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	if s := m.String(); s != "aa:bb:cc:dd:ee:ff" {
		t.Fatalf("String = %s", s)
	}
	if s := (MAC{1, 2, 3, 4, 5, 6}).String(); s != "01:02:03:04:05:06" {
		t.Fatalf("String = %s", s)
	}
	for _, s := range []string{"aa:bb:cc:dd:ee:ff", "AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:+ff", "aa:bb:cc:dd:ee:0ff"} {
		if got, err := ParseMAC(s); err != nil || got != m {
			t.Errorf("ParseMAC(%q) = %v, %v", s, got, err)
		}
	}
	if got, err := ParseMAC("a:b:c:d:e:f"); err != nil || got != (MAC{0xa, 0xb, 0xc, 0xd, 0xe, 0xf}) {
		t.Errorf("single digits: %v, %v", got, err)
	}
	for _, s := range []string{"aa:bb:cc", "not:a:mac:at:all:x", "", "aa-bb-cc-dd-ee-ff", "aa:bb:cc:dd:ee:100", "aa:bb:cc:dd:ee:", "aa:bb:cc:dd:ee:+", "aa:bb:cc:dd:ee:-1", "aa:bb:cc:dd:ee:ff:00"} {
		if _, err := ParseMAC(s); err == nil {
			t.Errorf("ParseMAC(%q) accepted", s)
		}
	}
	a := AddrFromMAC(m)
	if !a.IsValid() || a.String() != "aa:bb:cc:dd:ee:ff" || CheckAddr(a) != nil {
		t.Fatalf("MAC addr: valid %v, %s, %v", a.IsValid(), a, CheckAddr(a))
	}
	if (Addr{}).IsValid() || CheckAddr(Addr{}) == nil || CheckAddr(AddrFromMAC(MAC{})) == nil {
		t.Fatal("zero address accepted")
	}
}
