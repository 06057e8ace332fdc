package xdp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/fips-go/fips/bpf"
	"github.com/fips-go/fips/testing/nsthread"
	"github.com/vishvananda/netlink"
)

// TestWatchLocalAddrs: for a wildcard bind the XDP program's local_addrs
// holds every address of the host and follows additions and removals
// through netlink; for a specific bind it holds that address alone; the
// watch stops. It runs in a fresh network namespace with a veth link, and
// needs root like the bpf tests.
func TestWatchLocalAddrs(t *testing.T) {
	nsthread.Lock(t)
	nsthread.New(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "fipsd0"}, PeerName: "fipsd1"})) // down: no link-local address
	l, err := netlink.LinkByName("fipsd0")
	must(err)
	a1, _ := netlink.ParseAddr("10.7.0.1/24")
	must(netlink.AddrAdd(l, a1))
	obj, err := bpf.Load(bpf.Options{NoAttach: true})
	must(err)
	t.Cleanup(func() { obj.Close() })
	count := func() bpf.Occupancy {
		t.Helper()
		occ, err := obj.Occupancy()
		must(err)
		return occ
	}
	waitFor := func(want uint32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for count().LocalAddrs != want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if occ := count(); occ.LocalAddrs != want || !occ.LocalOnly {
			t.Fatalf("local_addrs %d (local_only %v), want %d", occ.LocalAddrs, occ.LocalOnly, want)
		}
	}

	p := &Plane{obj: obj}
	must(p.watchLocalAddrs([]netip.Addr{netip.IPv6Unspecified()}))
	waitFor(1)                                // 10.7.0.1 (lo is down: no addresses)
	a2, _ := netlink.ParseAddr("10.8.0.1/24") // another subnet: deleting a primary deletes its secondaries
	must(netlink.AddrAdd(l, a2))
	waitFor(2)
	must(netlink.AddrDel(l, a1))
	waitFor(1)
	done := make(chan struct{})
	go func() { p.stopWatch(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stopWatch did not return")
	}
	if p.mapErrors != 0 {
		t.Errorf("map errors %d: %s", p.mapErrors, p.lastErr)
	}

	q := &Plane{obj: obj}
	must(q.watchLocalAddrs([]netip.Addr{netip.MustParseAddr("192.0.2.5")}))
	waitFor(1)
	q.stopWatch() // nothing to stop
}
