package bpf

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/fips-go/fips/testing/nsthread"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// inNetns runs the rest of the test on a locked OS thread inside a fresh
// network namespace holding a veth pair (both ends up) and returns the two
// ifindexes. The namespace goes away with its last reference at cleanup.
func inNetns(t *testing.T) (int, int) {
	t.Helper()
	nsthread.Lock(t)
	nsthread.New(t)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "fipsx0"}, PeerName: "fipsx1"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("add veth: %v", err)
	}
	var idx [2]int
	for i, name := range []string{"fipsx0", "fipsx1"} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		idx[i] = l.Attrs().Index
	}
	return idx[0], idx[1]
}

// xdpOn reports the program id and netlink attach mode on ifindex.
func xdpOn(t *testing.T, ifindex int) (uint32, uint32) {
	t.Helper()
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		t.Fatal(err)
	}
	x := l.Attrs().Xdp
	if x == nil || !x.Attached {
		return 0, 0
	}
	return x.ProgId, x.AttachMode
}

// TestAttachModes: auto gets native XDP on veth, generic is generic, the
// kernel shows our program id on both, a second Attach is refused, and
// Detach and Close remove the program.
func TestAttachModes(t *testing.T) {
	a, b := inNetns(t)
	obj := load(t, Options{})
	id, err := obj.ProgramID()
	if err != nil {
		t.Fatal(err)
	}
	if m, err := obj.Attach(a, AttachAuto); err != nil || m != AttachNative {
		t.Fatalf("Attach(auto) = %s, %v; want native", m, err)
	}
	if m, err := obj.Attach(b, AttachGeneric); err != nil || m != AttachGeneric {
		t.Fatalf("Attach(generic) = %s, %v", m, err)
	}
	if got, mode := xdpOn(t, a); got != id || mode != nl.XDP_ATTACHED_DRV {
		t.Errorf("ifindex %d: program %d mode %d, want %d native", a, got, mode, id)
	}
	if got, mode := xdpOn(t, b); got != id || mode != nl.XDP_ATTACHED_SKB {
		t.Errorf("ifindex %d: program %d mode %d, want %d generic", b, got, mode, id)
	}
	if _, err := obj.Attach(a, AttachNative); err == nil {
		t.Error("second Attach to the same interface succeeded")
	}
	att := obj.Attachments()
	if len(att) != 2 {
		t.Fatalf("Attachments = %+v", att)
	}
	for _, x := range att {
		want := map[int]AttachMode{a: AttachNative, b: AttachGeneric}[x.Ifindex]
		if x.Mode != want || x.ProgramID != id {
			t.Errorf("attachment %+v, want mode %s program %d", x, want, id)
		}
	}
	if err := obj.Detach(b); err != nil {
		t.Fatal(err)
	}
	if got, _ := xdpOn(t, b); got != 0 {
		t.Errorf("after Detach ifindex %d still runs program %d", b, got)
	}
	if err := obj.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := xdpOn(t, a); got != 0 {
		t.Errorf("after Close ifindex %d still runs program %d", a, got)
	}
}

// TestAttachReplacesStale: an xdp_fips left attached through netlink by a
// dead daemon is replaced; a foreign program is not touched.
func TestAttachReplacesStale(t *testing.T) {
	a, b := inNetns(t)

	// The "crashed daemon": attach through netlink, then drop every fd.
	old := load(t, Options{})
	oldID, _ := old.ProgramID()
	la, err := netlink.LinkByIndex(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetXdpFdWithFlags(la, old.objs.XdpFips.FD(), nl.XDP_FLAGS_DRV_MODE); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := xdpOn(t, a); got != oldID {
		t.Fatalf("stale program %d not attached (got %d)", oldID, got)
	}

	obj := load(t, Options{})
	id, _ := obj.ProgramID()
	if m, err := obj.Attach(a, AttachAuto); err != nil || m != AttachNative {
		t.Fatalf("Attach over a stale xdp_fips = %s, %v", m, err)
	}
	if got, mode := xdpOn(t, a); got != id || mode != nl.XDP_ATTACHED_DRV {
		t.Errorf("ifindex %d runs %d mode %d, want %d native", a, got, mode, id)
	}

	// A foreign program stays, and Attach says whose it is.
	foreign, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "not_fips", Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.LoadImm(asm.R0, 2, asm.DWord), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	lb, err := netlink.LinkByIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetXdpFdWithFlags(lb, foreign.FD(), nl.XDP_FLAGS_SKB_MODE); err != nil {
		t.Fatal(err)
	}
	fi, _ := foreign.Info()
	fid, _ := fi.ID()
	if _, err := obj.Attach(b, AttachAuto); err == nil || !strings.Contains(err.Error(), "not_fips") {
		t.Errorf("Attach over a foreign program: %v, want a refusal naming not_fips", err)
	}
	if got, _ := xdpOn(t, b); got != uint32(fid) {
		t.Errorf("foreign program replaced: ifindex %d runs %d, want %d", b, got, fid)
	}
}

// TestFragsAttachesToJumboMTU: on a veth pair with a 9000-byte MTU, the
// program without Frags cannot attach natively (veth: ERANGE above about
// a page), with Frags it can.
func TestFragsAttachesToJumboMTU(t *testing.T) {
	a, b := inNetns(t)
	for _, i := range []int{a, b} {
		l, err := netlink.LinkByIndex(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetMTU(l, 9000); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := Load(Options{NoAttach: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if m, err := plain.Attach(a, AttachNative); err == nil {
		t.Fatalf("without Frags attached %s to a 9000-byte MTU veth", m)
	} else {
		t.Logf("without Frags: %v", err)
	}
	frags, err := Load(Options{NoAttach: true, Frags: true})
	if err != nil {
		t.Fatal(err)
	}
	defer frags.Close()
	if m, err := frags.Attach(a, AttachNative); err != nil || m != AttachNative {
		t.Fatalf("with Frags: %s, %v", m, err)
	}
	if id, mode := xdpOn(t, a); id == 0 || mode != nl.XDP_ATTACHED_DRV {
		t.Fatalf("on the interface: program %d mode %d", id, mode)
	}
}
