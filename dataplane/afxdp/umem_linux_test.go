package afxdp

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/bpf"
)

// TestSharedUMEM: two sockets on the two ends of a veth share one UMEM
// (the second bound with XDP_SHARED_UMEM, inheriting copy mode and
// need_wakeup): frames redirected on either end arrive on that end's
// socket byte for byte, and a frame the second socket transmits through
// its TX ring crosses the veth and is redirected to the first — one
// region, separate rings, no frame handed between them. A third socket
// asking for more frames than are left is refused.
func TestSharedUMEM(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, b, macB := veth(t)
	la, err := netlink.LinkByIndex(a)
	if err != nil {
		t.Fatal(err)
	}
	macA := la.Attrs().HardwareAddr
	obj, err := bpf.Load(bpf.Options{NoAttach: true})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if err := obj.SetConfig([]uint16{2121}, 10, 10); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{a, b} {
		if _, err := obj.Attach(i, bpf.AttachNative); err != nil {
			t.Fatal(err)
		}
	}
	u, err := NewUMEM(2*(64+64), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	sb, err := Open(Options{Ifindex: b, Frames: 64, TxFrames: 64, UMEM: u, ZeroCopy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Release()
	sa, err := Open(Options{Ifindex: a, Frames: 64, TxFrames: 64, UMEM: u})
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Release()
	if u.Sockets() != 2 {
		t.Fatalf("UMEM bound by %d sockets, want 2", u.Sockets())
	}
	if _, err := Open(Options{Ifindex: a, Queue: 0, Frames: 16, UMEM: u}); !errors.Is(err, errUMEMFull) {
		t.Fatalf("a third socket on a full UMEM: %v", err)
	}
	for _, s := range []*Socket{sa, sb} {
		st, err := s.Statistics()
		if err != nil || st.ZeroCopy || !st.NeedWakeup {
			t.Fatalf("statistics %+v, %v: want copy mode with need_wakeup", st, err)
		}
	}
	for slot, c := range []struct {
		ifindex int
		s       *Socket
	}{{b, sb}, {a, sa}} {
		if err := obj.BindXSK(c.ifindex, 0, uint32(slot), c.s.FD()); err != nil {
			t.Fatal(err)
		}
		defer obj.UnbindXSK(c.ifindex, 0, uint32(slot))
	}
	if err := obj.AddLink(0x01020304, 0); err != nil {
		t.Fatal(err)
	}
	pk, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pk)
	timer := time.AfterFunc(10*time.Second, func() { sa.Close(); sb.Close() })
	defer timer.Stop()
	recv := func(s *Socket, n int) [][]byte {
		t.Helper()
		var got [][]byte
		for len(got) < n {
			if _, err := s.Receive(func(f []byte) { got = append(got, bytes.Clone(f)) }); err != nil {
				t.Fatalf("after %d of %d frames: %v", len(got), n, err)
			}
		}
		return got
	}
	// 40 frames each way through AF_PACKET: into a (they arrive at b) and
	// into b (they arrive at a).
	for _, dir := range []struct {
		out  int
		dst  []byte
		sock *Socket
	}{{a, macB, sb}, {b, macA, sa}} {
		var want [][]byte
		for i := 0; i < 40; i++ {
			f := frame(dir.dst, 0, established(t, 0x01020304, 20+i))
			want = append(want, f)
			if err := unix.Sendto(pk, f, 0, &unix.SockaddrLinklayer{Ifindex: dir.out, Halen: 6, Protocol: 0x0008}); err != nil {
				t.Fatal(err)
			}
		}
		got := recv(dir.sock, len(want))
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d differs", i)
			}
		}
	}
	// sa transmits through its TX ring; b's program redirects to sb.
	q := sa.NewTxQueue()
	var want [][]byte
	for i := 0; i < 30; i++ {
		f := frame(macB, 0, established(t, 0x01020304, 100+i))
		addr, buf, ok := q.Frame()
		if !ok {
			t.Fatal("no TX frame")
		}
		copy(buf, f)
		q.Submit(addr, len(f))
		want = append(want, f)
	}
	q.Flush()
	got := recv(sb, len(want))
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("transmitted frame %d differs", i)
		}
	}
	sta, _ := sa.Statistics()
	stb, _ := sb.Statistics()
	if sta.Transmitted != 30 || stb.Received != 70 || sta.Received != 40 || stb.RxDropped != 0 || sta.TxInvalidDescs != 0 {
		t.Fatalf("a %+v\nb %+v", sta, stb)
	}
	timer.Stop()
}
