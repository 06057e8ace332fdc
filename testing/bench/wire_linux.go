//go:build linux

package bench

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/fips-go/fips/testing/netns"
)

// The wire-like underlay (UnderlayWire): on every veth end, SetWire
// runs `ethtool -K` on each feature WireOffload names that `ethtool -k`
// shows on (it fails on one that is on and fixed), then `ethtool -k` must
// show every one of them off. On a fresh veth of kernel 6.18 that is
//
//	ethtool -K <veth> generic-segmentation-offload off \
//	  tx-tcp-segmentation off tx-tcp-ecn-segmentation off tx-tcp-mangleid-segmentation off \
//	  tx-tcp6-segmentation off tx-tcp-accecn-segmentation off tx-udp-segmentation off \
//	  tx-gso-list off tx-sctp-segmentation off tx-gre-segmentation off \
//	  tx-gre-csum-segmentation off tx-ipxip4-segmentation off tx-ipxip6-segmentation off \
//	  tx-udp_tnl-segmentation off tx-udp_tnl-csum-segmentation off
//
// while generic-receive-offload, rx-gro-list and rx-udp-gro-forwarding
// are off already on a veth (checked all the same), rx-gro-hw and
// large-receive-offload off and fixed, and "ufo" gone from the kernel.

// Features runs `ethtool -k ifname` in namespace ns.
func Features(ns, ifname string) (map[string]Feature, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "ethtool", "-k", ifname).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("bench: ethtool -k %s in %s: %w: %s", ifname, ns, err, strings.TrimSpace(string(out)))
	}
	fs := ParseFeatures(string(out))
	if len(fs) == 0 {
		return nil, fmt.Errorf("bench: ethtool -k %s in %s: no features in %q", ifname, ns, firstLines(string(out), 3))
	}
	return fs, nil
}

// SetWire turns the WireOffload features of ifname in namespace ns off
// and checks that `ethtool -k` then shows all of them off.
func SetWire(ns, ifname string) error {
	fs, err := Features(ns, ifname)
	if err != nil {
		return err
	}
	args := []string{"netns", "exec", ns, "ethtool", "-K", ifname}
	for _, name := range WireOffloadsOn(fs) {
		if fs[name].Fixed {
			return fmt.Errorf("bench: wire underlay: %s on %s is on and fixed: cannot turn it off", name, ifname)
		}
		args = append(args, name, "off")
	}
	if len(args) > 6 {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("bench: %s: %w: %s", strings.Join(args[3:], " "), err, strings.TrimSpace(string(out)))
		}
	}
	if fs, err = Features(ns, ifname); err != nil {
		return err
	}
	if on := WireOffloadsOn(fs); len(on) > 0 {
		return fmt.Errorf("bench: wire underlay: still on on %s after ethtool -K: %v", ifname, on)
	}
	return nil
}

// linkEnds are both ends of every link: namespace and interface.
func linkEnds(links []*netns.Link) [][2]string {
	var ends [][2]string
	for _, l := range links {
		ends = append(ends, [2]string{l.A.NS, l.IfA}, [2]string{l.B.NS, l.IfB})
	}
	return ends
}

// FrameCounter is a tcx ingress program on one interface that counts
// the skbs the stack receives there and their sizes. At tcx ingress
// skb->len counts from the Ethernet header, and on a veth without GRO
// (the wire underlay turns it off; an XDP program elides it anyway) an
// skb is what crossed the veth: a super-packet shows as one skb of up to
// 64 KB, a frame as at most the MTU plus 14.
type FrameCounter struct {
	prog  *ebpf.Program
	stats *ebpf.Map
	link  link.Link
}

// FrameStats are a FrameCounter's counts, summed over the CPUs.
type FrameStats struct {
	Packets, Bytes uint64
	// Max is the largest skb->len seen (bytes from the Ethernet header).
	Max uint64
	// GSO counts skbs that carried more than one segment.
	GSO uint64
}

// __sk_buff offsets (include/uapi/linux/bpf.h).
const (
	skbLen     = 0
	skbGSOSegs = 164
)

// frameProgram counts into the per-CPU entry 0 of stats: {packets,
// bytes, max len, gso skbs}. It returns TCX_NEXT: it never changes what
// happens to the packet.
func frameProgram(stats *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, stats.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R7, asm.R6, skbLen, asm.Word),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R7),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 16, asm.DWord),
		asm.JGE.Reg(asm.R1, asm.R7, "gso"),
		asm.StoreMem(asm.R0, 16, asm.R7, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, skbGSOSegs, asm.Word).WithSymbol("gso"),
		asm.JLE.Imm(asm.R1, 1, "out"),
		asm.LoadMem(asm.R1, asm.R0, 24, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 24, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, -1).WithSymbol("out"), // TCX_NEXT
		asm.Return(),
	}
}

// CountFrames attaches a FrameCounter to ifname's ingress in namespace
// ns. Close detaches it.
func CountFrames(ns, ifname string) (*FrameCounter, error) {
	stats, err := ebpf.NewMap(&ebpf.MapSpec{Name: "fgo_frames", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 32, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("bench: frame counter map: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "fgo_frames", Type: ebpf.SchedCLS, License: "GPL",
		Instructions: frameProgram(stats)})
	if err != nil {
		stats.Close()
		return nil, fmt.Errorf("bench: frame counter: load: %w", err)
	}
	c := &FrameCounter{prog: prog, stats: stats}
	err = inNamespace(ns, func() error {
		l, err := netlink.LinkByName(ifname)
		if err != nil {
			return fmt.Errorf("bench: frame counter: %s: %w", ifname, err)
		}
		c.link, err = link.AttachTCX(link.TCXOptions{Interface: l.Attrs().Index, Program: prog, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return fmt.Errorf("bench: frame counter: attach to %s ingress: %w", ifname, err)
		}
		return nil
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Stats reads the counts.
func (c *FrameCounter) Stats() (FrameStats, error) {
	var per [][4]uint64
	if err := c.stats.Lookup(uint32(0), &per); err != nil {
		return FrameStats{}, fmt.Errorf("bench: frame counter: %w", err)
	}
	var s FrameStats
	for _, v := range per {
		s.Packets += v[0]
		s.Bytes += v[1]
		s.Max = max(s.Max, v[2])
		s.GSO += v[3]
	}
	return s, nil
}

// Close detaches and unloads the counter.
func (c *FrameCounter) Close() {
	if c.link != nil {
		c.link.Close()
	}
	c.prog.Close()
	c.stats.Close()
}

// inNamespace runs f on a locked thread in the named namespace.
func inNamespace(name string, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		return fmt.Errorf("bench: current netns: %w", err)
	}
	defer orig.Close()
	target, err := vnetns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("bench: netns %s: %w", name, err)
	}
	defer target.Close()
	if err := vnetns.Set(target); err != nil {
		return fmt.Errorf("bench: enter netns %s: %w", name, err)
	}
	ferr := f()
	if err := vnetns.Set(orig); err != nil {
		// Locked again so the thread dies with the goroutine rather
		// than run other code in the wrong namespace.
		runtime.LockOSThread()
		return fmt.Errorf("bench: restore netns: %w", err)
	}
	return ferr
}
