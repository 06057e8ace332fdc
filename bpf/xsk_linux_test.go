package bpf

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bindXSK opens a minimal AF_XDP socket (16-frame UMEM, fill, completion
// and RX rings, never mapped) bound in copy mode to queue 0 of ifindex, so
// the xsks map can hold it. The redirect branch needs nothing more: under
// BPF_PROG_TEST_RUN the program's XDP_REDIRECT is returned, not delivered.
func bindXSK(t *testing.T, ifindex int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("AF_XDP socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	const frame, frames = 4096, 16
	mem, err := unix.Mmap(-1, 0, frame*frames, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("UMEM mmap: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&mem[0]))), Len: uint64(len(mem)), Size: frame}
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0); e != 0 {
		t.Fatalf("XDP_UMEM_REG: %v", e)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt, frames); err != nil {
			t.Fatalf("ring option %d: %v", opt, err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex)}); err != nil {
		t.Fatalf("bind AF_XDP to ifindex %d queue 0: %v", ifindex, err)
	}
	return fd
}

// TestRedirectToXSK: an established frame of a known link arriving on an
// interface and queue with a bound AF_XDP socket is redirected; on
// another interface, or once unbound, it passes to the kernel; an
// unknown index is still dropped.
func TestRedirectToXSK(t *testing.T) {
	a, b := inNetns(t)
	obj := load(t, Options{})
	configure(t, obj, 1, 1)
	fd := bindXSK(t, a)
	if err := obj.BindXSK(a, 0, 5, fd); err != nil {
		t.Fatalf("BindXSK: %v", err)
	}
	if err := obj.AddLink(knownV, 0); err != nil {
		t.Fatal(err)
	}
	frame := func(idx uint32) []byte {
		return ethernet(etherIPv6, ipv6(srcV6, protoUDP, udp(portA, established(t, 0x02, idx, 100))))
	}
	runCtx(t, obj, frame(knownV), on(a), ReasonLinkXSK)
	runCtx(t, obj, frame(knownV), on(b), ReasonLinkKernel)
	runCtx(t, obj, frame(knownV+1), on(a), ReasonUnknownIndex)
	// An Ethernet transport's established frame goes the same way.
	if err := obj.SetEthernet(a, etherFIPS); err != nil {
		t.Fatal(err)
	}
	runCtx(t, obj, fipsData(srcMAC, established(t, 0, knownV, 100), 0), on(a), ReasonLinkXSK)
	runCtx(t, obj, fipsData(srcMAC, established(t, 0, knownV+1, 100), 0), on(a), ReasonUnknownIndex)
	runCtx(t, obj, beacon(srcMAC, 1), on(a), ReasonBeacon)
	if err := obj.UnbindXSK(a, 0, 5); err != nil {
		t.Fatal(err)
	}
	runCtx(t, obj, frame(knownV), on(a), ReasonLinkKernel)
	if err := obj.BindXSK(a, 0, MaxSlots, fd); err == nil {
		t.Error("BindXSK to slot MaxSlots succeeded")
	}
}
