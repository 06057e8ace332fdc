package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Objects is the loaded xdp_fips program with its maps and the interfaces
// it is attached to. Its methods are safe for concurrent use.
type Objects struct {
	objs       xdpObjects
	maxLinks   uint32
	maxSources uint32
	refused    atomic.Uint64 // AddLink refusals: links full

	localMu      sync.Mutex // serialises SetLocalAddrs, SetConfig and SetEthernet
	localOnly    bool
	next         bool                     // SetNext: FMP version 1 accepted
	ports        int                      // how many UDP ports SetConfig gave
	eth          map[int]uint16           // what eth_ifaces holds: EtherType by ifindex
	local        map[xdpFipsAddr]struct{} // what local_addrs holds
	localRefused atomic.Uint64            // addresses SetLocalAddrs could not store

	mu       sync.Mutex
	attached map[int]*attachment // by ifindex
}

type attachment struct {
	mode AttachMode
	link link.Link
}

// Load loads program and maps into the kernel and, unless o.NoAttach,
// attaches the program to o.Interfaces in o.Mode. The config map starts
// disabled: every frame passes as ReasonDisabled until SetConfig.
func Load(o Options) (*Objects, error) {
	spec, err := loadXdp()
	if err != nil {
		return nil, fmt.Errorf("bpf: %w", err)
	}
	obj := &Objects{
		maxLinks:   capacity(o.MaxLinks, DefaultMaxLinks),
		maxSources: capacity(o.MaxSources, DefaultMaxSources),
		attached:   make(map[int]*attachment),
		local:      make(map[xdpFipsAddr]struct{}),
		eth:        make(map[int]uint16),
	}
	spec.Maps["links"].MaxEntries = obj.maxLinks
	spec.Maps["ratelimit"].MaxEntries = obj.maxSources
	if o.Frags {
		spec.Programs[ProgramName].Flags |= unix.BPF_F_XDP_HAS_FRAGS
	}
	if err := spec.LoadAndAssign(&obj.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("bpf: load %s: %+v", ProgramName, ve)
		}
		return nil, fmt.Errorf("bpf: load %s: %w", ProgramName, err)
	}
	if o.NoAttach {
		return obj, nil
	}
	for _, ifindex := range o.Interfaces {
		if _, err := obj.Attach(ifindex, o.Mode); err != nil {
			return nil, errors.Join(err, obj.Close())
		}
	}
	return obj, nil
}

func capacity(want, def uint32) uint32 {
	if want == 0 || want > def {
		return def
	}
	return want
}

// Attach attaches the program to ifindex through a bpf_link and returns the
// mode it got: AttachAuto tries native (driver) XDP, then generic.
//
// A bpf_link lives as long as its file descriptor, so the link of a daemon
// that crashed is already gone with the process. What a crash or an older
// tool can leave behind is a program attached through netlink (ip link set
// xdp, or a netlink-attaching loader), which makes the kernel refuse a
// bpf_link with EBUSY or EEXIST. Attach then looks at the interface's
// program: if it is named xdp_fips it is stale and is detached through
// netlink before attaching again; any other program is left alone and
// Attach fails naming it.
func (o *Objects) Attach(ifindex int, mode AttachMode) (AttachMode, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a, ok := o.attached[ifindex]; ok {
		return a.mode, fmt.Errorf("bpf: ifindex %d: already attached (%s)", ifindex, a.mode)
	}
	var modes []AttachMode
	switch mode {
	case AttachAuto:
		modes = []AttachMode{AttachNative, AttachGeneric}
	case AttachNative, AttachGeneric:
		modes = []AttachMode{mode}
	default:
		return 0, fmt.Errorf("bpf: attach ifindex %d: unknown mode %s", ifindex, mode)
	}
	var errs []error
	for _, m := range modes {
		l, err := o.attach(ifindex, m)
		if err == nil {
			o.attached[ifindex] = &attachment{mode: m, link: l}
			return m, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
	}
	return 0, fmt.Errorf("bpf: attach %s to ifindex %d: %w", ProgramName, ifindex, errors.Join(errs...))
}

func (o *Objects) attach(ifindex int, m AttachMode) (link.Link, error) {
	flags := link.XDPDriverMode
	if m == AttachGeneric {
		flags = link.XDPGenericMode
	}
	opts := link.XDPOptions{Program: o.objs.XdpFips, Interface: ifindex, Flags: flags}
	l, err := link.AttachXDP(opts)
	if err == nil || !(errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST)) {
		return l, err
	}
	if serr := removeStale(ifindex); serr != nil {
		return nil, errors.Join(err, serr)
	}
	return link.AttachXDP(opts)
}

// removeStale detaches a netlink-attached xdp_fips from ifindex.
func removeStale(ifindex int) error {
	nlink, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return fmt.Errorf("look up ifindex %d: %w", ifindex, err)
	}
	x := nlink.Attrs().Xdp
	if x == nil || !x.Attached || x.ProgId == 0 {
		return errors.New("interface busy, but no XDP program found on it")
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(x.ProgId))
	if err != nil {
		return fmt.Errorf("open XDP program %d: %w", x.ProgId, err)
	}
	info, err := prog.Info()
	prog.Close()
	if err != nil {
		return fmt.Errorf("XDP program %d: %w", x.ProgId, err)
	}
	if info.Name != ProgramName {
		return fmt.Errorf("interface runs XDP program %d %q, not %s: not replacing it", x.ProgId, info.Name, ProgramName)
	}
	var flags int
	switch x.AttachMode {
	case nl.XDP_ATTACHED_DRV:
		flags = nl.XDP_FLAGS_DRV_MODE
	case nl.XDP_ATTACHED_SKB:
		flags = nl.XDP_FLAGS_SKB_MODE
	default:
		return fmt.Errorf("stale %s (program %d) in attach mode %d: not removable here", ProgramName, x.ProgId, x.AttachMode)
	}
	if err := netlink.LinkSetXdpFdWithFlags(nlink, -1, flags); err != nil {
		return fmt.Errorf("detach stale %s (program %d): %w", ProgramName, x.ProgId, err)
	}
	return nil
}

// Detach removes the program from ifindex.
func (o *Objects) Detach(ifindex int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	a, ok := o.attached[ifindex]
	if !ok {
		return fmt.Errorf("bpf: ifindex %d: not attached", ifindex)
	}
	delete(o.attached, ifindex)
	if err := a.link.Close(); err != nil {
		return fmt.Errorf("bpf: detach ifindex %d: %w", ifindex, err)
	}
	return nil
}

// ProgramID is the kernel's id of the loaded program.
func (o *Objects) ProgramID() (uint32, error) {
	info, err := o.objs.XdpFips.Info()
	if err != nil {
		return 0, fmt.Errorf("bpf: program info: %w", err)
	}
	id, ok := info.ID()
	if !ok {
		return 0, errors.New("bpf: kernel reports no program id")
	}
	return uint32(id), nil
}

// Attachments lists the interfaces the program is attached to.
func (o *Objects) Attachments() []Attachment {
	id, _ := o.ProgramID()
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Attachment, 0, len(o.attached))
	for ifindex, a := range o.attached {
		out = append(out, Attachment{Ifindex: ifindex, Mode: a.mode, ProgramID: id})
	}
	return out
}

// SetConfig enables the program for up to MaxPorts UDP ports, with a
// handshake token bucket per source of burst packets refilled at rate
// packets per second (burst 0: no handshake limit). No ports disables it.
func (o *Objects) SetConfig(ports []uint16, rate, burst uint32) error {
	if err := checkConfig(ports); err != nil {
		return err
	}
	o.localMu.Lock()
	defer o.localMu.Unlock()
	var c xdpFipsConfig
	o.ports = len(ports)
	if o.ports > 0 || len(o.eth) > 0 {
		c.Enabled = 1
	}
	if o.localOnly {
		c.LocalOnly = 1
	}
	if o.next {
		c.Next = 1
	}
	copy(c.Ports[:], ports)
	c.Rate, c.Burst = rate, burst
	if err := o.objs.Config.Put(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: write config: %w", err)
	}
	return nil
}

// SetLocalAddrs makes the program act only on frames to one of addrs (the
// node's own addresses: the bound one, or every address of the host for a
// wildcard bind); frames to other destinations on a FIPS port pass
// untouched as ReasonNotLocal, since this host only routes them. It
// replaces the previous set; nil turns the check off again (every frame
// to a FIPS port is judged). Addresses beyond MaxLocalAddrs are refused,
// counted in Occupancy.LocalAddrsRefused, and ErrLocalAddrsFull returned
// after the others are stored.
func (o *Objects) SetLocalAddrs(addrs []netip.Addr) error {
	o.localMu.Lock()
	defer o.localMu.Unlock()
	want := make(map[xdpFipsAddr]struct{}, len(addrs))
	for _, a := range addrs {
		want[xdpFipsAddr{Addr: a.As16()}] = struct{}{} // IPv4 as ::ffff:a.b.c.d, as the program keys it
	}
	var errs []error
	for k := range o.local {
		if _, ok := want[k]; ok {
			continue
		}
		if err := o.objs.LocalAddrs.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("bpf: local_addrs: remove %v: %w", netip.AddrFrom16(k.Addr), err))
			continue
		}
		delete(o.local, k)
	}
	refused := 0
	for k := range want {
		if _, ok := o.local[k]; ok {
			continue
		}
		if err := o.objs.LocalAddrs.Put(k, uint8(1)); err != nil {
			if errors.Is(err, unix.E2BIG) {
				refused++
				continue
			}
			errs = append(errs, fmt.Errorf("bpf: local_addrs: add %v: %w", netip.AddrFrom16(k.Addr), err))
			continue
		}
		o.local[k] = struct{}{}
	}
	if refused > 0 {
		o.localRefused.Add(uint64(refused))
		errs = append(errs, fmt.Errorf("bpf: %d of %d addresses: %w (%d entries)", refused, len(want), ErrLocalAddrsFull, MaxLocalAddrs))
	}
	var c xdpFipsConfig
	if err := o.objs.Config.Lookup(uint32(0), &c); err != nil {
		return errors.Join(append(errs, fmt.Errorf("bpf: read config: %w", err))...)
	}
	o.localOnly = addrs != nil
	c.LocalOnly = 0
	if o.localOnly {
		c.LocalOnly = 1
	}
	if err := o.objs.Config.Put(uint32(0), &c); err != nil {
		errs = append(errs, fmt.Errorf("bpf: write config: %w", err))
	}
	return errors.Join(errs...)
}

// SetNext makes the program take upstream next's FMP version 1 beside
// version 0 (a node that speaks it: node.wire_format v1 or auto): XX
// handshakes of 41, 118+ and 85+ bytes through the source's token bucket,
// established 0x10 frames of known links, Ethernet data behind next's
// 4-byte header and next's 5-byte beacons. Off (the default), every
// version-1 packet is dropped as ReasonBadVersion, as before.
func (o *Objects) SetNext(on bool) error {
	o.localMu.Lock()
	defer o.localMu.Unlock()
	var c xdpFipsConfig
	if err := o.objs.Config.Lookup(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: read config: %w", err)
	}
	o.next = on
	c.Next = 0
	if on {
		c.Next = 1
	}
	if err := o.objs.Config.Put(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: write config: %w", err)
	}
	return nil
}

// SetEthernet makes the program judge frames of ethertype arriving on
// ifindex as an Ethernet transport's (data frames as FMP, beacons through
// a per-MAC bucket); ethertype 0 ends that. With at least one such
// interface the program is enabled even without UDP ports. At most
// MaxEthernetInterfaces.
func (o *Objects) SetEthernet(ifindex int, ethertype uint16) error {
	if ifindex <= 0 {
		return fmt.Errorf("bpf: ethernet ifindex %d: out of range", ifindex)
	}
	if ethertype != 0 && ethertype < 0x0600 {
		return fmt.Errorf("bpf: ethernet ifindex %d: EtherType %#04x is an 802.3 length, want >= 0x0600", ifindex, ethertype)
	}
	o.localMu.Lock()
	defer o.localMu.Unlock()
	key := uint32(ifindex)
	if ethertype == 0 {
		if err := o.objs.EthIfaces.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("bpf: eth_ifaces[%d]: %w", ifindex, err)
		}
		delete(o.eth, ifindex)
	} else {
		if _, ok := o.eth[ifindex]; !ok && len(o.eth) >= MaxEthernetInterfaces {
			return fmt.Errorf("bpf: ethernet ifindex %d: %d interfaces already, at most %d", ifindex, len(o.eth), MaxEthernetInterfaces)
		}
		// The frame's h_proto as the program reads it: network order.
		be := ethertype>>8 | ethertype<<8
		if err := o.objs.EthIfaces.Put(key, be); err != nil {
			return fmt.Errorf("bpf: eth_ifaces[%d]: %w", ifindex, err)
		}
		o.eth[ifindex] = ethertype
	}
	var c xdpFipsConfig
	if err := o.objs.Config.Lookup(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: read config: %w", err)
	}
	c.Enabled = 0
	if o.ports > 0 || len(o.eth) > 0 {
		c.Enabled = 1
	}
	if err := o.objs.Config.Put(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: write config: %w", err)
	}
	return nil
}

// setClock makes the program read its token-bucket clock from the config
// map instead of bpf_ktime_get_ns (0 restores the kernel clock). Tests only.
func (o *Objects) setClock(ns uint64) error {
	var c xdpFipsConfig
	if err := o.objs.Config.Lookup(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: read config: %w", err)
	}
	c.ClockNs = ns
	if err := o.objs.Config.Put(uint32(0), &c); err != nil {
		return fmt.Errorf("bpf: write config: %w", err)
	}
	return nil
}

// AddLink routes established frames with this receiver index to the worker
// slot (its xsks key). Replacing an existing index never fails for space; a
// new one fails with ErrLinksFull, counted in Occupancy.LinksRefused, when
// the map is full.
func (o *Objects) AddLink(index, slot uint32) error {
	if slot >= MaxSlots {
		return fmt.Errorf("bpf: link %#x: slot %d, want < %d", index, slot, MaxSlots)
	}
	if err := o.objs.Links.Put(index, xdpFipsLink{Slot: slot}); err != nil {
		if errors.Is(err, unix.E2BIG) {
			o.refused.Add(1)
			return fmt.Errorf("bpf: link %#x: %w (%d entries)", index, ErrLinksFull, o.maxLinks)
		}
		return fmt.Errorf("bpf: link %#x: %w", index, err)
	}
	return nil
}

// BindXSK makes fd, an AF_XDP socket bound to queue of ifindex, the
// destination of established frames of known links arriving there: it is
// stored at slot of the xsks map, and (ifindex, queue) names the slot.
func (o *Objects) BindXSK(ifindex, queue int, slot uint32, fd int) error {
	if slot >= MaxSlots {
		return fmt.Errorf("bpf: xsk slot %d, want < %d", slot, MaxSlots)
	}
	if ifindex <= 0 || queue < 0 || fd < 0 {
		return fmt.Errorf("bpf: xsk for ifindex %d queue %d fd %d: out of range", ifindex, queue, fd)
	}
	if err := o.objs.Xsks.Put(slot, uint32(fd)); err != nil {
		return fmt.Errorf("bpf: xsks[%d]: %w", slot, err)
	}
	k := xdpFipsXskKey{Ifindex: uint32(ifindex), Queue: uint32(queue)}
	if err := o.objs.XskSlots.Put(k, slot); err != nil {
		return errors.Join(fmt.Errorf("bpf: xsk_slots[%d/%d]: %w", ifindex, queue, err), o.objs.Xsks.Delete(slot))
	}
	return nil
}

// UnbindXSK undoes BindXSK: frames of (ifindex, queue) pass to the
// kernel socket again.
func (o *Objects) UnbindXSK(ifindex, queue int, slot uint32) error {
	k := xdpFipsXskKey{Ifindex: uint32(ifindex), Queue: uint32(queue)}
	var errs []error
	if err := o.objs.XskSlots.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		errs = append(errs, fmt.Errorf("bpf: xsk_slots[%d/%d]: %w", ifindex, queue, err))
	}
	if err := o.objs.Xsks.Delete(slot); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		errs = append(errs, fmt.Errorf("bpf: xsks[%d]: %w", slot, err))
	}
	return errors.Join(errs...)
}

// RemoveLink forgets a receiver index.
func (o *Objects) RemoveLink(index uint32) error {
	if err := o.objs.Links.Delete(index); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("bpf: link %#x: %w", index, ErrUnknownLink)
		}
		return fmt.Errorf("bpf: remove link %#x: %w", index, err)
	}
	return nil
}

// Stats sums the per-CPU counters.
func (o *Objects) Stats() (Stats, error) {
	s := make(Stats, verdictMax)
	for _, v := range Verdicts() {
		s[v] = make(map[Reason]Counters)
	}
	var per []xdpFipsCounter
	for v := Verdict(0); v < verdictMax; v++ {
		for r := Reason(0); r < reasonMax; r++ {
			key := uint32(v)*uint32(reasonMax) + uint32(r)
			if err := o.objs.Stats.Lookup(key, &per); err != nil {
				return nil, fmt.Errorf("bpf: read stats[%s/%s]: %w", v, r, err)
			}
			var c Counters
			for _, p := range per {
				c.Packets += p.Packets
				c.Bytes += p.Bytes
			}
			if r.Verdict() == v || c != (Counters{}) {
				s[v][r] = c
			}
		}
	}
	return s, nil
}

// Occupancy counts the entries of links and ratelimit by iterating them.
func (o *Objects) Occupancy() (Occupancy, error) {
	links, err := countKeys[uint32](o.objs.Links)
	if err != nil {
		return Occupancy{}, fmt.Errorf("bpf: count links: %w", err)
	}
	sources, err := countKeys[xdpFipsAddr](o.objs.Ratelimit)
	if err != nil {
		return Occupancy{}, fmt.Errorf("bpf: count ratelimit: %w", err)
	}
	local, err := countKeys[xdpFipsAddr](o.objs.LocalAddrs)
	if err != nil {
		return Occupancy{}, fmt.Errorf("bpf: count local_addrs: %w", err)
	}
	o.localMu.Lock()
	localOnly := o.localOnly
	o.localMu.Unlock()
	return Occupancy{
		Links: links, LinksMax: o.maxLinks, LinksRefused: o.refused.Load(),
		Sources: sources, SourcesMax: o.maxSources,
		LocalAddrs: local, LocalAddrsMax: MaxLocalAddrs, LocalAddrsRefused: o.localRefused.Load(),
		LocalOnly: localOnly,
	}, nil
}

func countKeys[K any](m *ebpf.Map) (uint32, error) {
	var (
		n   uint32
		key K
		cur any // nil: the first key
	)
	for {
		err := m.NextKey(cur, &key)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
		prev := key
		cur = &prev
		if n > m.MaxEntries() {
			return n, errors.New("more keys than max_entries")
		}
	}
}

// Close detaches the program from every interface and unloads it.
func (o *Objects) Close() error {
	o.mu.Lock()
	var errs []error
	for ifindex, a := range o.attached {
		if err := a.link.Close(); err != nil {
			errs = append(errs, fmt.Errorf("bpf: detach ifindex %d: %w", ifindex, err))
		}
		delete(o.attached, ifindex)
	}
	o.mu.Unlock()
	if err := o.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("bpf: close: %w", err))
	}
	return errors.Join(errs...)
}
