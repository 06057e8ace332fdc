//go:build linux

package netns

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The kernels this runs on have no sch_netem, so induced loss is a TC
// program: at one interface's ingress, every Nth IPv4/UDP packet to a
// port is dropped, and the program counts what it saw.

// DropStats are a Dropper's counts.
type DropStats struct {
	Seen    uint64 // UDP packets to the port
	Dropped uint64
	// GSO counts packets that carried several segments (passed whole,
	// not counted in Seen): a nonzero count means the ratio is off.
	GSO uint64
}

// Dropper is a TC ingress program dropping every Nth UDP datagram to a
// port on one interface of a namespace.
type Dropper struct {
	prog  *ebpf.Program
	stats *ebpf.Map
	link  link.Link
}

// __sk_buff field offsets (include/uapi/linux/bpf.h).
const (
	skbData    = 76
	skbDataEnd = 80
	skbGSOSegs = 164
)

// dropProgram is the dropper: Ethernet, IPv4 without options, UDP to
// port; the stats map's one entry holds {seen, dropped, gso}.
func dropProgram(stats *ebpf.Map, port uint16, every int32) asm.Instructions {
	be16 := func(v uint16) int32 { // a big-endian u16 as a little-endian load reads it
		var b [2]byte
		binary.BigEndian.PutUint16(b[:], v)
		return int32(binary.LittleEndian.Uint16(b[:]))
	}
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, skbDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14+20+8),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R5, be16(0x0800), "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14, asm.Byte),
		asm.JNE.Imm(asm.R5, 0x45, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14+9, asm.Byte),
		asm.JNE.Imm(asm.R5, 17, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14+20+2, asm.Half),
		asm.JNE.Imm(asm.R5, be16(port), "pass"),
		// The counters.
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, stats.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R1, asm.R6, skbGSOSegs, asm.Word),
		asm.JGT.Imm(asm.R1, 1, "gso"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mod.Imm(asm.R1, every),
		asm.JNE.Imm(asm.R1, 0, "pass"),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 2), // TC_ACT_SHOT
		asm.Return(),
		asm.LoadMem(asm.R1, asm.R0, 16, asm.DWord).WithSymbol("gso"),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 16, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, -1).WithSymbol("pass"), // TCX_NEXT
		asm.Return(),
	}
}

// DropEveryNth attaches a dropper to ifname's ingress in node's
// namespace: one in every UDP datagrams to port is dropped. Close
// detaches it.
func (m *Mesh) DropEveryNth(n *Node, ifname string, port uint16, every int) (*Dropper, error) {
	if every < 2 {
		return nil, fmt.Errorf("drop: every %d: want at least 2", every)
	}
	stats, err := ebpf.NewMap(&ebpf.MapSpec{Name: "fgo_drop_stats", Type: ebpf.Array, KeySize: 4, ValueSize: 24, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("drop: stats map: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "fgo_drop", Type: ebpf.SchedCLS, License: "GPL",
		Instructions: dropProgram(stats, port, int32(every))})
	if err != nil {
		stats.Close()
		return nil, fmt.Errorf("drop: load: %w", err)
	}
	d := &Dropper{prog: prog, stats: stats}
	// The interface index and the attachment are the namespace's.
	err = inNamespace(n.NS, func() error {
		l, err := netlink.LinkByName(ifname)
		if err != nil {
			return fmt.Errorf("drop: %s: %w", ifname, err)
		}
		d.link, err = link.AttachTCX(link.TCXOptions{Interface: l.Attrs().Index, Program: prog, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return fmt.Errorf("drop: attach to %s ingress: %w", ifname, err)
		}
		return nil
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Stats reads the dropper's counts.
func (d *Dropper) Stats() (DropStats, error) {
	var v [3]uint64
	if err := d.stats.Lookup(uint32(0), &v); err != nil {
		return DropStats{}, fmt.Errorf("drop: stats: %w", err)
	}
	return DropStats{Seen: v[0], Dropped: v[1], GSO: v[2]}, nil
}

// Close detaches and unloads the dropper.
func (d *Dropper) Close() {
	if d.link != nil {
		d.link.Close()
	}
	d.prog.Close()
	d.stats.Close()
}

// inNamespace runs f on a thread in the named namespace.
func inNamespace(name string, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("netns: current: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("netns: %s: %w", name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return fmt.Errorf("netns: enter %s: %w", name, err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		// The thread stays locked and dies with the goroutine rather
		// than run other code in the wrong namespace.
		runtime.LockOSThread()
		return fmt.Errorf("netns: restore: %w", err)
	}
	return ferr
}
