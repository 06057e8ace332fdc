package bpf

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TCObjects are the loaded tc_fips programs with their maps and the
// interfaces they are attached to. Safe for concurrent use.
type TCObjects struct {
	objs tcObjects

	mu       sync.Mutex
	attached map[int]*tcAttachment
}

type tcAttachment struct {
	mode  TCAttachMode
	links []link.Link // tcx: egress, ingress
}

// clsactPriority is the filter priority (and handle 1) the clsact
// fallback uses on both hooks: a filter there named tc_fips_* is ours.
const clsactPriority = 0xf1f5

// LoadTC loads the tc programs and their maps, attached nowhere; the
// config starts disabled (everything counted as TCReasonDisabled).
func LoadTC() (*TCObjects, error) {
	spec, err := loadTc()
	if err != nil {
		return nil, fmt.Errorf("bpf: %w", err)
	}
	t := &TCObjects{attached: make(map[int]*tcAttachment)}
	if err := spec.LoadAndAssign(&t.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("bpf: load tc_fips: %+v", ve)
		}
		return nil, fmt.Errorf("bpf: load tc_fips: %w", err)
	}
	return t, nil
}

// SetConfig enables both programs for up to MaxPorts UDP ports (egress:
// source port, ingress: destination port); no ports disables them.
func (t *TCObjects) SetConfig(ports []uint16) error {
	if err := checkConfig(ports); err != nil {
		return err
	}
	var c tcFipsTcConfig
	if len(ports) > 0 {
		c.Enabled = 1
	}
	copy(c.Ports[:], ports)
	if err := t.objs.TcConfig.Put(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: write tc config: %w", err)
	}
	return nil
}

// Attach puts tc_fips_egress and tc_fips_ingress on ifindex: as tcx links
// when the kernel has them, else as direct-action filters of a clsact
// qdisc (created when missing, left in place on detach). A clsact filter
// a crashed daemon left at our priority is replaced when it is named
// tc_fips_*; another program there makes Attach fail naming it.
func (t *TCObjects) Attach(ifindex int) (TCAttachMode, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.attached[ifindex]; ok {
		return a.mode, fmt.Errorf("bpf: ifindex %d: tc programs already attached (%s)", ifindex, a.mode)
	}
	eg, err := link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: t.objs.TcFipsEgress, Attach: ebpf.AttachTCXEgress})
	if err == nil {
		in, ierr := link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: t.objs.TcFipsIngress, Attach: ebpf.AttachTCXIngress})
		if ierr != nil {
			return 0, errors.Join(fmt.Errorf("bpf: tcx ingress on ifindex %d: %w", ifindex, ierr), eg.Close())
		}
		t.attached[ifindex] = &tcAttachment{mode: TCAttachTCX, links: []link.Link{eg, in}}
		return TCAttachTCX, nil
	}
	if cerr := t.attachClsact(ifindex); cerr != nil {
		return 0, fmt.Errorf("bpf: attach tc programs to ifindex %d: tcx: %w; clsact: %w", ifindex, err, cerr)
	}
	t.attached[ifindex] = &tcAttachment{mode: TCAttachClsact}
	return TCAttachClsact, nil
}

func (t *TCObjects) attachClsact(ifindex int) error {
	q := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := netlink.QdiscAdd(q); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add clsact qdisc: %w", err)
	}
	for _, h := range []struct {
		parent uint32
		prog   *ebpf.Program
		name   string
	}{{netlink.HANDLE_MIN_EGRESS, t.objs.TcFipsEgress, TCEgressName}, {netlink.HANDLE_MIN_INGRESS, t.objs.TcFipsIngress, TCIngressName}} {
		if err := checkClsactSlot(ifindex, h.parent); err != nil {
			return err
		}
		f := &netlink.BpfFilter{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: ifindex, Parent: h.parent, Handle: 1,
				Protocol: unix.ETH_P_ALL, Priority: clsactPriority},
			Fd: h.prog.FD(), Name: h.name, DirectAction: true,
		}
		if err := netlink.FilterReplace(f); err != nil {
			return fmt.Errorf("add %s filter: %w", h.name, err)
		}
	}
	return nil
}

// checkClsactSlot refuses to replace another tool's filter at our priority.
func checkClsactSlot(ifindex int, parent uint32) error {
	nl, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return fmt.Errorf("look up ifindex %d: %w", ifindex, err)
	}
	fs, err := netlink.FilterList(nl, parent)
	if err != nil {
		return fmt.Errorf("list filters: %w", err)
	}
	for _, f := range fs {
		if f.Attrs().Priority != clsactPriority {
			continue
		}
		bf, ok := f.(*netlink.BpfFilter)
		if !ok || (bf.Name != TCEgressName && bf.Name != TCIngressName) {
			return fmt.Errorf("another filter (%s) sits at priority %#x: not replacing it", f.Type(), clsactPriority)
		}
	}
	return nil
}

func delClsact(ifindex int) error {
	var errs []error
	for _, parent := range []uint32{netlink.HANDLE_MIN_EGRESS, netlink.HANDLE_MIN_INGRESS} {
		f := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: ifindex, Parent: parent, Handle: 1,
			Protocol: unix.ETH_P_ALL, Priority: clsactPriority}}
		if err := netlink.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete clsact filter: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (a *tcAttachment) close(ifindex int) error {
	if a.mode == TCAttachClsact {
		return delClsact(ifindex)
	}
	var errs []error
	for _, l := range a.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// Detach removes both programs from ifindex.
func (t *TCObjects) Detach(ifindex int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.attached[ifindex]
	if !ok {
		return fmt.Errorf("bpf: ifindex %d: tc programs not attached", ifindex)
	}
	delete(t.attached, ifindex)
	if err := a.close(ifindex); err != nil {
		return fmt.Errorf("bpf: detach tc programs from ifindex %d: %w", ifindex, err)
	}
	return nil
}

func progID(p *ebpf.Program) uint32 {
	info, err := p.Info()
	if err != nil {
		return 0
	}
	id, _ := info.ID()
	return uint32(id)
}

// Attachments lists the interfaces the programs are attached to.
func (t *TCObjects) Attachments() []TCAttachment {
	eg, in := progID(t.objs.TcFipsEgress), progID(t.objs.TcFipsIngress)
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TCAttachment, 0, len(t.attached))
	for ifindex, a := range t.attached {
		out = append(out, TCAttachment{Ifindex: ifindex, Mode: a.mode, EgressID: eg, IngressID: in})
	}
	return out
}

// Stats sums the per-CPU counters.
func (t *TCObjects) Stats() (TCStats, error) {
	s := make(TCStats, tcDirMax)
	var per []tcFipsCounter
	for _, d := range TCDirs() {
		s[d] = make(map[TCReason]Counters)
		for _, r := range TCReasons() {
			if !r.In(d) {
				continue
			}
			key := uint32(d)*uint32(tcReasonMax) + uint32(r)
			if err := t.objs.TcStats.Lookup(key, &per); err != nil {
				return nil, fmt.Errorf("bpf: read tc_stats[%s/%s]: %w", d, r, err)
			}
			var c Counters
			for _, p := range per {
				c.Packets += p.Packets
				c.Bytes += p.Bytes
			}
			s[d][r] = c
		}
	}
	return s, nil
}

// Close detaches the programs from every interface and unloads them.
func (t *TCObjects) Close() error {
	t.mu.Lock()
	var errs []error
	for ifindex, a := range t.attached {
		if err := a.close(ifindex); err != nil {
			errs = append(errs, fmt.Errorf("bpf: detach tc programs from ifindex %d: %w", ifindex, err))
		}
		delete(t.attached, ifindex)
	}
	t.mu.Unlock()
	if err := t.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("bpf: close tc_fips: %w", err))
	}
	return errors.Join(errs...)
}
