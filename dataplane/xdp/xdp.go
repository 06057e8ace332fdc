package xdp

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/fips-go/fips/bpf"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane"
)

// Env is what the plane needs from the node.
type Env struct {
	Log *slog.Logger
	// Transports are the node's transports in order: the XDP program is
	// configured for the UDP and Ethernet ones that are up.
	Transports []transport.Transport
	// Engine runs the AF_XDP sockets' workers (nil: no engine, and no
	// AF_XDP).
	Engine *dataplane.Engine
	// Loop takes what the AF_XDP workers leave to it.
	Loop dataplane.Loop
}

// Plane is the loaded program and the receiver indices written to it.
type Plane struct {
	log *slog.Logger
	obj *bpf.Objects
	tc  *bpf.TCObjects // nil: not attached
	xsk *xskPlane      // nil: no AF_XDP sockets
	// ports, eths and ifaces are what the XDP program was configured
	// for: the UDP ports, the Ethernet transports' interfaces, and every
	// interface it is attached to (eths' among them).
	ports  []uint16
	eths   []ethIface
	ifaces []net.Interface
	// keys are the (transport, index) pairs the link layer reported;
	// refs counts them per index, since the links map is keyed by index
	// alone (loop only).
	keys map[xdpKey]struct{}
	refs map[uint32]int

	mu        sync.Mutex // guards errors (read by show_bpf)
	mapErrors uint64
	lastErr   string

	// stopAddrs ends the netlink address watch of a wildcard bind (nil:
	// none runs); addrsDone is closed when it has returned.
	stopAddrs chan struct{}
	addrsDone chan struct{}
}

// ethIface is an Ethernet transport on the interface it runs on.
type ethIface struct {
	id        transport.ID
	name      string
	ifindex   int
	etherType uint16
	mac       transport.MAC
	mtu       int // the transport's: the largest FMP packet a frame carries
}

// ethernetTransport is what the plane needs of an Ethernet transport
// (dataplane/ethernet's).
type ethernetTransport interface {
	transport.Transport
	Interface() string
	EtherType() uint16
	LocalMAC() transport.MAC
}

// ethernetInterfaces finds the Ethernet transports that are up and their
// interfaces.
func ethernetInterfaces(ts []transport.Transport) ([]ethIface, error) {
	var out []ethIface
	for _, t := range ts {
		et, ok := t.(ethernetTransport)
		if !ok || t.Type() != "ethernet" || t.State() != transport.StateUp {
			continue
		}
		ifi, err := net.InterfaceByName(et.Interface())
		if err != nil {
			return nil, fmt.Errorf("ethernet transport on %s: %w", et.Interface(), err)
		}
		if slices.ContainsFunc(out, func(e ethIface) bool { return e.ifindex == ifi.Index }) {
			return nil, fmt.Errorf("two Ethernet transports on interface %s", ifi.Name)
		}
		out = append(out, ethIface{id: t.ID(), name: ifi.Name, ifindex: ifi.Index, etherType: et.EtherType(), mac: et.LocalMAC(), mtu: t.MTU()})
	}
	if len(out) > bpf.MaxEthernetInterfaces {
		return nil, fmt.Errorf("%d Ethernet transports, the XDP program takes at most %d", len(out), bpf.MaxEthernetInterfaces)
	}
	return out, nil
}

type xdpKey struct {
	t   transport.ID
	idx uint32
}

// Start runs once the transports are up: it loads and attaches the XDP
// program as dataplane.mode says, or explains why not (the view says
// which; the plane is nil without XDP). In xdp mode a failure is
// returned and the node does not start.
func Start(o dataplane.Options, env Env) (ctl.DataplaneView, *Plane, error) {
	v := ctl.DataplaneView{Mode: ctl.DataplaneUserspace, Configured: o.Mode, Interfaces: []ctl.XDPInterface{},
		TC:    ctl.TCView{Reason: "no XDP: tc programs run alongside it", Interfaces: []ctl.TCInterface{}},
		AFXDP: ctl.AFXDPView{Reason: "no XDP: AF_XDP needs it"}}
	if v.Configured == "" {
		v.Configured = ctl.DataplaneUserspace
	}
	if v.Configured == ctl.DataplaneUserspace {
		v.Reason = "dataplane.mode is userspace: no BPF loaded"
		env.Log.Info("dataplane: userspace", "reason", v.Reason)
		return v, nil, nil
	}
	p, ifs, err := loadXDP(o, env)
	if err != nil {
		if v.Configured == ctl.DataplaneXDP {
			return v, nil, fmt.Errorf("dataplane.mode is xdp, but %w", err)
		}
		v.Reason = "dataplane.mode is auto, XDP unavailable (" + err.Error() + "): running in userspace"
		env.Log.Warn("dataplane: userspace", "reason", v.Reason)
		return v, nil, nil
	}
	v.Mode, v.Interfaces = ctl.DataplaneXDP, ifs
	modes := make([]string, len(ifs))
	for i, a := range ifs {
		modes[i] = a.Name + ":" + a.AttachMode
	}
	v.Reason = "dataplane.mode is " + v.Configured + ": " + bpf.ProgramName + " attached to " + strings.Join(modes, ", ")
	v.TC = p.startTC(o)
	v.AFXDP = ctl.AFXDPView{Reason: "dataplane.afxdp is false: established frames pass to the UDP sockets"}
	if o.AFXDP {
		x, err := p.startAFXDP(o, env)
		if err != nil {
			v.AFXDP.Reason = "AF_XDP unavailable (" + err.Error() + "): established frames pass to the UDP sockets"
			env.Log.Warn("dataplane: no AF_XDP", "reason", v.AFXDP.Reason)
		} else {
			p.xsk = x
			v.AFXDP = ctl.AFXDPView{Enabled: true, Sockets: len(x.socks), Reason: fmt.Sprintf("%d AF_XDP sockets (one per RX queue) receive established frames of known links", len(x.socks))}
			if k, mib := x.sharing(); k > 0 {
				v.AFXDP.SharedUMEM = k
				v.AFXDP.Reason += fmt.Sprintf("; %d of them share one %d MiB UMEM", k, mib)
			}
			if x.transmit {
				v.AFXDP.Reason += "; forwards leave through their TX rings"
			}
			env.Log.Info("dataplane: AF_XDP", "reason", v.AFXDP.Reason)
		}
	}
	env.Log.Info("dataplane: xdp", "reason", v.Reason, "program_id", ifs[0].ProgramID)
	return v, p, nil
}

// loadXDP loads the program, attaches it to every interface (native, else
// generic) and writes the config map. All or nothing: a failure leaves
// nothing loaded.
func loadXDP(o dataplane.Options, env Env) (*Plane, []ctl.XDPInterface, error) {
	var ports []uint16
	var bound []netip.Addr
	for _, t := range env.Transports {
		if t.Type() != "udp" || t.State() != transport.StateUp {
			continue
		}
		ap, err := netip.ParseAddrPort(t.LocalAddr())
		if err != nil {
			continue
		}
		if !slices.Contains(ports, ap.Port()) {
			ports = append(ports, ap.Port())
		}
		bound = append(bound, ap.Addr().Unmap())
	}
	eths, err := ethernetInterfaces(env.Transports)
	if err != nil {
		return nil, nil, err
	}
	if len(ports) == 0 && len(eths) == 0 {
		return nil, nil, errors.New("no UDP transport is bound and no Ethernet transport is up")
	}
	if len(ports) > bpf.MaxPorts {
		return nil, nil, fmt.Errorf("%d UDP ports bound, the XDP program takes at most %d", len(ports), bpf.MaxPorts)
	}
	var ifaces []net.Interface
	if len(ports) > 0 || len(o.Interfaces) > 0 {
		if ifaces, err = xdpInterfaces(o.Interfaces, bound); err != nil {
			return nil, nil, err
		}
	}
	// An Ethernet transport's interface always carries the program: it
	// is where that transport's frames arrive.
	for _, e := range eths {
		if !slices.ContainsFunc(ifaces, func(i net.Interface) bool { return i.Index == e.ifindex }) {
			ifi, err := net.InterfaceByIndex(e.ifindex)
			if err != nil {
				return nil, nil, fmt.Errorf("interface %s: %w", e.name, err)
			}
			ifaces = append(ifaces, *ifi)
		}
	}
	// Without AF_XDP, load with xdp.frags: the program then attaches
	// natively to jumbo-MTU interfaces too (their large frames pass to
	// the socket as multi_buffer). AF_XDP sockets here take single
	// buffers only, so with them every frame must fit one.
	obj, err := bpf.Load(bpf.Options{NoAttach: true, Frags: !o.AFXDP})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot load %s: %w", bpf.ProgramName, err)
	}
	fail := func(err error) (*Plane, []ctl.XDPInterface, error) {
		if cerr := obj.Close(); cerr != nil {
			env.Log.Warn("dataplane: unloading XDP program", "error", cerr)
		}
		return nil, nil, err
	}
	rate := uint32(min(max(o.HandshakeRate, 0), 1e9))
	if o.HandshakeRate > 0 && rate == 0 {
		rate = 1 // the program counts whole tokens per second
	}
	if err := obj.SetConfig(ports, rate, o.HandshakeBurst); err != nil {
		return fail(fmt.Errorf("cannot configure %s: %w", bpf.ProgramName, err))
	}
	if o.AcceptNext {
		if err := obj.SetNext(true); err != nil {
			return fail(fmt.Errorf("cannot configure %s for the next wire format: %w", bpf.ProgramName, err))
		}
	}
	for _, e := range eths {
		if err := obj.SetEthernet(e.ifindex, e.etherType); err != nil {
			return fail(fmt.Errorf("cannot configure %s for the Ethernet transport on %s: %w", bpf.ProgramName, e.name, err))
		}
	}
	id, err := obj.ProgramID()
	if err != nil {
		return fail(err)
	}
	mode := bpf.AttachAuto
	switch o.XDPAttach {
	case "native":
		mode = bpf.AttachNative
	case "generic":
		mode = bpf.AttachGeneric
	}
	p := &Plane{log: env.Log, obj: obj, ports: ports, eths: eths, ifaces: ifaces, keys: map[xdpKey]struct{}{}, refs: map[uint32]int{}}
	// Before attaching: the program must never judge another host's
	// FIPS traffic that this host routes.
	if err := p.watchLocalAddrs(bound); err != nil {
		return fail(fmt.Errorf("cannot give %s the node's addresses: %w", bpf.ProgramName, err))
	}
	fail = func(err error) (*Plane, []ctl.XDPInterface, error) {
		p.stopWatch()
		if cerr := obj.Close(); cerr != nil {
			env.Log.Warn("dataplane: unloading XDP program", "error", cerr)
		}
		return nil, nil, err
	}
	var out []ctl.XDPInterface
	for _, ifi := range ifaces {
		m, err := obj.Attach(ifi.Index, mode)
		if err != nil {
			return fail(fmt.Errorf("interface %s: %w", ifi.Name, err))
		}
		out = append(out, ctl.XDPInterface{Name: ifi.Name, Ifindex: ifi.Index, AttachMode: m.String(), ProgramID: id})
	}
	return p, out, nil
}

// startTC attaches the ECN programs to the XDP program's interfaces,
// unless dataplane.ecn is false. A failure is logged and shown, never
// fatal: ECN marking is an optimisation, the dataplane works without it.
func (p *Plane) startTC(o dataplane.Options) ctl.TCView {
	v := ctl.TCView{Interfaces: []ctl.TCInterface{}}
	if o.NoECN {
		v.Reason = "dataplane.ecn is false"
		p.log.Info("dataplane: tc ECN programs not loaded", "reason", v.Reason)
		return v
	}
	tc, err := bpf.LoadTC()
	if err == nil {
		err = tc.SetConfig(p.ports)
	}
	if err == nil {
		for _, ifi := range p.ifaces {
			var m bpf.TCAttachMode
			if m, err = tc.Attach(ifi.Index); err != nil {
				err = fmt.Errorf("interface %s: %w", ifi.Name, err)
				break
			}
			v.Interfaces = append(v.Interfaces, ctl.TCInterface{Name: ifi.Name, Ifindex: ifi.Index, AttachMode: m.String()})
		}
	}
	if err != nil {
		if tc != nil {
			if cerr := tc.Close(); cerr != nil {
				p.log.Warn("dataplane: unloading tc programs", "error", cerr)
			}
		}
		v.Interfaces = []ctl.TCInterface{}
		v.Reason = "tc programs unavailable (" + err.Error() + "): outgoing FIPS UDP is not ECN-marked"
		p.log.Warn("dataplane: no tc ECN programs", "reason", v.Reason)
		return v
	}
	ids := tc.Attachments()
	for i := range v.Interfaces {
		for _, a := range ids {
			if a.Ifindex == v.Interfaces[i].Ifindex {
				v.Interfaces[i].EgressID, v.Interfaces[i].IngressID = a.EgressID, a.IngressID
			}
		}
	}
	p.tc = tc
	names := make([]string, len(v.Interfaces))
	for i, a := range v.Interfaces {
		names[i] = a.Name + ":" + a.AttachMode
	}
	v.Attached = true
	v.Reason = bpf.TCEgressName + " and " + bpf.TCIngressName + " attached to " + strings.Join(names, ", ")
	p.log.Info("dataplane: tc ECN programs", "reason", v.Reason)
	return v
}

// xdpInterfaces resolves dataplane.xdp_interfaces, or finds the
// interfaces carrying the bound addresses.
func xdpInterfaces(names []string, bound []netip.Addr) ([]net.Interface, error) {
	var out []net.Interface
	if len(names) > 0 {
		for _, name := range names {
			ifi, err := net.InterfaceByName(name)
			if err != nil {
				return nil, fmt.Errorf("interface %s (dataplane.xdp_interfaces): %w", name, err)
			}
			out = append(out, *ifi)
		}
		return out, nil
	}
	all, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	unspecified := slices.ContainsFunc(bound, netip.Addr.IsUnspecified)
	for _, ifi := range all {
		if ifi.Flags&net.FlagLoopback != 0 || ifi.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil || len(addrs) == 0 {
			continue
		}
		carries := unspecified
		for _, a := range addrs {
			pfx, err := netip.ParsePrefix(a.String())
			if err == nil && slices.Contains(bound, pfx.Addr().Unmap()) {
				carries = true
			}
		}
		if carries {
			out = append(out, ifi)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no up non-loopback interface carries the UDP bound address %v", bound)
	}
	return out, nil
}

// IndexAdded is peer.IndexObserver's (the loop only): established
// frames with idx pass XDP from now on.
func (p *Plane) IndexAdded(t transport.ID, idx uint32) {
	k := xdpKey{t, idx}
	if _, ok := p.keys[k]; ok {
		return
	}
	p.keys[k] = struct{}{}
	p.refs[idx]++
	if p.refs[idx] == 1 {
		p.note(p.obj.AddLink(idx, 0))
	}
}

// IndexRemoved is peer.IndexObserver's (the loop only): idx is dropped
// in XDP again.
func (p *Plane) IndexRemoved(t transport.ID, idx uint32) {
	k := xdpKey{t, idx}
	if _, ok := p.keys[k]; !ok {
		return
	}
	delete(p.keys, k)
	if p.refs[idx]--; p.refs[idx] == 0 {
		delete(p.refs, idx)
		p.note(p.obj.RemoveLink(idx))
	}
}

func (p *Plane) note(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	p.mapErrors++
	p.lastErr = err.Error()
	p.mu.Unlock()
}

// Stop ends the AF_XDP readers, detaches and unloads the programs.
func (p *Plane) Stop() {
	if p.xsk != nil {
		p.stopXSK(p.xsk)
	}
	if p.tc != nil {
		if err := p.tc.Close(); err != nil {
			p.log.Warn("dataplane: detaching tc programs", "error", err)
		}
	}
	p.stopWatch()
	if err := p.obj.Close(); err != nil {
		p.log.Warn("dataplane: detaching XDP program", "error", err)
		return
	}
	p.log.Info("dataplane: XDP program detached")
}

// Fill reads the programs' counters, the maps' occupancy and the AF_XDP
// sockets into v (show_bpf) now; it is safe from any goroutine (the maps
// are the kernel's).
func (p *Plane) Fill(v *ctl.BPFView) error {
	stats, err := p.obj.Stats()
	if err != nil {
		return err
	}
	occ, err := p.obj.Occupancy()
	if err != nil {
		return err
	}
	if v.ProgramID, err = p.obj.ProgramID(); err != nil {
		return err
	}
	for _, vd := range bpf.Verdicts() {
		for _, r := range bpf.Reasons() {
			if c, ok := stats[vd][r]; ok {
				v.Counters = append(v.Counters, ctl.XDPCounter{Verdict: vd.String(), Reason: r.String(), Packets: c.Packets, Bytes: c.Bytes})
			}
		}
	}
	if p.xsk != nil {
		v.XSKs = p.xsk.views()
		v.XSKTx = p.xsk.txView()
	}
	if p.tc != nil {
		ts, err := p.tc.Stats()
		if err != nil {
			return err
		}
		for _, d := range bpf.TCDirs() {
			for _, r := range bpf.TCReasons() {
				if c, ok := ts[d][r]; ok {
					v.TCCounters = append(v.TCCounters, ctl.TCCounter{Direction: d.String(), Reason: r.String(), Packets: c.Packets, Bytes: c.Bytes})
				}
			}
		}
	}
	p.mu.Lock()
	v.Maps = &ctl.XDPMaps{Links: occ.Links, LinksMax: occ.LinksMax, LinksRefused: occ.LinksRefused,
		Ratelimit: occ.Sources, RatelimitMax: occ.SourcesMax,
		LocalAddrs: occ.LocalAddrs, LocalAddrsMax: occ.LocalAddrsMax, LocalAddrsRefused: occ.LocalAddrsRefused,
		MapErrors: p.mapErrors, LastError: p.lastErr}
	p.mu.Unlock()
	return nil
}
