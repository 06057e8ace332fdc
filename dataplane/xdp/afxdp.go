package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/bpf"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane"
	"github.com/fips-go/fips/dataplane/afxdp"
)

// xskPlane is the AF_XDP receive path: one socket per RX queue of every
// XDP interface, each read by its own goroutine running a dataplane
// worker. What the worker does not take is copied to the loop like a
// socket read; what it sends goes through the UDP transports' worker
// send queues.
type xskPlane struct {
	socks []*xskSock
	stop  chan struct{}
	wg    sync.WaitGroup
	bufs  *transport.BufferPool
	// ports maps a bound UDP port to its transport; eths an Ethernet
	// transport's interface (ifindex) to it.
	ports map[uint16]transport.ID
	eths  map[int]ethIface
	// transports are the node's by ID; eng and loop are the workers'.
	transports map[transport.ID]transport.Transport
	eng        *dataplane.Engine
	loop       dataplane.Loop
	// transmit: the workers send through the sockets' TX rings
	// (dataplane.afxdp_transmit: xsk); ecn is the codepoint their frames
	// carry (ECT(0) where the tc programs mark the socket path's).
	transmit bool
	ecn      uint8
	// umem is the memory every socket shares (nil: each has its own,
	// the kernel having refused the sharing).
	umem     *afxdp.UMEM
	txMu     sync.Mutex // guards txCounts (appended by starting workers)
	txCounts []*xskTxCounts
}

type xskSock struct {
	s       *afxdp.Socket
	name    string
	ifindex int
	queue   int
	slot    uint32
	// Counted by the reader, read by show_bpf.
	frames, toLoop, invalid, otherPort, refused atomic.Uint64
}

// rxQueues is how many RX queues the kernel gives interface name.
func rxQueues(name string) int {
	ents, err := os.ReadDir(filepath.Join("/sys/class/net", name, "queues"))
	if err != nil {
		return 1
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "rx-") {
			n++
		}
	}
	return max(n, 1)
}

// startAFXDP opens a socket per RX queue of every XDP interface and binds
// it into the program's maps. All or nothing.
func (p *Plane) startAFXDP(o dataplane.Options, env Env) (*xskPlane, error) {
	if env.Engine == nil {
		return nil, errors.New("dataplane.afxdp needs the dataplane engine (dataplane.engine is false)")
	}
	x := &xskPlane{stop: make(chan struct{}), bufs: transport.NewBufferPool(wire.FMPHeaderSize + 65535),
		ports: map[uint16]transport.ID{}, eths: map[int]ethIface{}, transmit: o.XSKTransmit,
		transports: map[transport.ID]transport.Transport{}, eng: env.Engine, loop: env.Loop}
	if p.tc != nil {
		x.ecn = 2
	}
	txFrames := 0
	if x.transmit {
		txFrames = xskTxFrames
	}
	for _, t := range env.Transports {
		id := t.ID()
		x.transports[id] = t
		if t.Type() != "udp" || t.State() != transport.StateUp {
			continue
		}
		if ap, err := netip.ParseAddrPort(t.LocalAddr()); err == nil {
			if _, ok := x.ports[ap.Port()]; !ok {
				x.ports[ap.Port()] = id
			}
		}
	}
	for _, e := range p.eths {
		x.eths[e.ifindex] = e
	}
	// One UMEM for all the sockets (XDP_SHARED_UMEM), each taking its
	// share of frames; a socket the kernel will not let share gets one
	// of its own.
	nsock := 0
	for _, ifi := range p.ifaces {
		nsock += rxQueues(ifi.Name)
	}
	if nsock > 0 && nsock <= bpf.MaxSlots {
		u, err := afxdp.NewUMEM(nsock*(xskRxFrames+txFrames), xskFrameSize)
		if err != nil {
			p.log.Warn("dataplane: no shared AF_XDP UMEM, one per socket", "error", err)
		} else {
			x.umem = u
		}
	}
	var slot uint32
	for _, ifi := range p.ifaces {
		for q := range rxQueues(ifi.Name) {
			if slot >= bpf.MaxSlots {
				p.stopXSK(x)
				return nil, fmt.Errorf("more than %d RX queues", bpf.MaxSlots)
			}
			o := afxdp.Options{Ifindex: ifi.Index, Queue: q, ZeroCopy: true, Frames: xskRxFrames, FrameSize: xskFrameSize,
				TxFrames: txFrames, UMEM: x.umem, BusyPoll: o.AFXDPBusyPoll}
			s, err := afxdp.Open(o)
			if err != nil && x.umem != nil {
				p.log.Warn("dataplane: AF_XDP socket cannot share the UMEM, opening its own", "interface", ifi.Name, "queue", q, "error", err)
				o.UMEM = nil
				s, err = afxdp.Open(o)
			}
			if err != nil {
				p.stopXSK(x)
				return nil, fmt.Errorf("interface %s queue %d: %w", ifi.Name, q, err)
			}
			xs := &xskSock{s: s, name: ifi.Name, ifindex: ifi.Index, queue: q, slot: slot}
			x.socks = append(x.socks, xs)
			if err := p.obj.BindXSK(ifi.Index, q, slot, s.FD()); err != nil {
				p.stopXSK(x)
				return nil, fmt.Errorf("interface %s queue %d: %w", ifi.Name, q, err)
			}
			slot++
		}
	}
	for i, xs := range x.socks {
		x.wg.Add(1)
		go x.read(xs, i)
	}
	return x, nil
}

// Each socket's share of the UMEM: its fill ring's frames and, with
// dataplane.afxdp_transmit: xsk, its TX ring's; frames of 4 KiB.
const (
	xskRxFrames  = 2048
	xskTxFrames  = 2048
	xskFrameSize = 4096
)

// xskSenders gives worker k a sender per UDP transport that transmits
// through the TX rings: on each interface, through socket k of that
// interface's (its own TX queue on it).
func (x *xskPlane) senders(w *dataplane.Worker, k int) {
	byIf := map[int][]*xskSock{}
	for _, xs := range x.socks {
		byIf[xs.ifindex] = append(byIf[xs.ifindex], xs)
	}
	for port, id := range x.ports {
		ws, ok := x.transports[id].(transport.Batched)
		if !ok {
			continue
		}
		fb, err := ws.NewSender()
		if err != nil {
			continue
		}
		c := &xskTxCounts{}
		s := &xskSender{fallback: fb, port: port, ecn: x.ecn, queues: map[int]*afxdp.TxQueue{}, resolve: resolveL2,
			dests: map[netip.AddrPort]*xskDest{}, counts: c}
		if ap, err := netip.ParseAddrPort(x.transports[id].LocalAddr()); err == nil {
			s.bind = ap.Addr().Unmap()
		}
		for ifindex, socks := range byIf {
			if q := socks[k%len(socks)].s.NewTxQueue(); q != nil {
				s.queues[ifindex] = q
			}
		}
		x.txMu.Lock()
		x.txCounts = append(x.txCounts, c)
		x.txMu.Unlock()
		w.UseSender(id, s)
	}
	for ifindex, e := range x.eths {
		socks := byIf[ifindex]
		ws, ok := x.transports[e.id].(transport.Batched)
		if len(socks) == 0 || !ok {
			continue
		}
		q := socks[k%len(socks)].s.NewTxQueue()
		if q == nil {
			continue
		}
		fb, err := ws.NewSender()
		if err != nil {
			continue
		}
		c := &xskTxCounts{}
		x.txMu.Lock()
		x.txCounts = append(x.txCounts, c)
		x.txMu.Unlock()
		w.UseSender(e.id, newEthSender(e, q, fb, c))
	}
}

// txView is show_bpf.xsk_tx.
func (x *xskPlane) txView() ctl.XSKTxView {
	v := ctl.XSKTxView{Reason: "dataplane.afxdp_transmit is socket: the workers send through the UDP sockets"}
	if !x.transmit {
		return v
	}
	v.Enabled = true
	v.Reason = "the AF_XDP workers seal into TX frames of the destination interface's socket"
	x.txMu.Lock()
	defer x.txMu.Unlock()
	for _, c := range x.txCounts {
		c.addTo(&v)
	}
	return v
}

// xskRead is one socket's worker: each redirected frame's datagram is
// offered to the engine worker as a UDP reader would, the batch's sends
// flushed after every ring drain.
func (x *xskPlane) read(xs *xskSock, k int) {
	defer x.wg.Done()
	w := x.eng.NewReaderWorker()
	defer w.Close()
	deliver := x.loop.Packet
	if x.transmit {
		x.senders(w, k)
	}
	offer := func(p transport.Packet) {
		switch dataplane.Offer(w, x.bufs, deliver, p) {
		case dataplane.Delivered:
			xs.toLoop.Add(1)
		case dataplane.Refused:
			xs.toLoop.Add(1)
			xs.refused.Add(1)
		case dataplane.TooLarge:
			xs.toLoop.Add(1)
			xs.invalid.Add(1)
		}
	}
	eth, isEth := x.eths[xs.ifindex]
	for {
		_, err := xs.s.Receive(func(f []byte) {
			// An Ethernet transport's data frame: the program judged
			// its FMP packet; the length field drops the padding.
			if isEth && len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == eth.etherType {
				parse := wire.ParseEthernetData
				if wire.EthernetDataVersion(f[14:]) == wire.FMPVersionNext {
					parse = wire.ParseEthernetDataV1 // the program passes these only when told to
				}
				d, err := parse(f[14:])
				if err != nil {
					xs.invalid.Add(1)
					return
				}
				xs.frames.Add(1)
				offer(transport.Packet{Transport: eth.id, From: transport.AddrFromMAC(transport.MAC(f[6:12])), Data: d.Packet, Arrived: time.Now().UnixNano()})
				return
			}
			d, err := afxdp.ParseUDP(f)
			if err != nil {
				xs.invalid.Add(1)
				return
			}
			id, ok := x.ports[d.DstPort]
			if !ok {
				xs.otherPort.Add(1)
				return
			}
			xs.frames.Add(1)
			// A link-local source is on the interface the frame came in
			// on, as a UDP socket reports it (its scope id).
			from := transport.AddrFromIP(netip.AddrPortFrom(transport.WithZoneIndex(d.Src.Addr(), uint32(xs.ifindex)), d.Src.Port()))
			offer(transport.Packet{Transport: id, From: from, Data: d.Payload, Arrived: time.Now().UnixNano(), CE: d.ECN == 3})
		})
		if err != nil {
			return
		}
		w.Flush()
	}
}

// stopXSK ends the readers, unbinds the sockets and frees them.
func (p *Plane) stopXSK(x *xskPlane) {
	close(x.stop)
	for _, xs := range x.socks {
		xs.s.Close()
	}
	x.wg.Wait()
	for _, xs := range x.socks {
		if err := p.obj.UnbindXSK(xs.ifindex, xs.queue, xs.slot); err != nil {
			p.log.Warn("dataplane: unbinding AF_XDP socket", "interface", xs.name, "queue", xs.queue, "error", err)
		}
		if err := xs.s.Release(); err != nil {
			p.log.Warn("dataplane: closing AF_XDP socket", "interface", xs.name, "queue", xs.queue, "error", err)
		}
	}
	if x.umem != nil {
		if err := x.umem.Close(); err != nil {
			p.log.Warn("dataplane: unmapping the AF_XDP UMEM", "error", err)
		}
	}
}

// sharing is how many sockets share the UMEM and its size in MiB.
func (x *xskPlane) sharing() (int, int) {
	if x.umem == nil {
		return 0, 0
	}
	return x.umem.Sockets(), x.umem.Frames() * xskFrameSize >> 20
}

// views is show_bpf's xsks.
func (x *xskPlane) views() []ctl.XSKView {
	out := make([]ctl.XSKView, 0, len(x.socks))
	for _, xs := range x.socks {
		st, _ := xs.s.Statistics()
		out = append(out, ctl.XSKView{Interface: xs.name, Ifindex: xs.ifindex, Queue: xs.queue, Slot: xs.slot, XSKStatistics: ctl.XSKStatistics(st),
			Frames: xs.frames.Load(), ToLoop: xs.toLoop.Load(), Invalid: xs.invalid.Load(),
			OtherPort: xs.otherPort.Load(), Refused: xs.refused.Load()})
	}
	return out
}
