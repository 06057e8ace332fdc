package ethernet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane"
)

// Defaults and limits (transports.ethernet.* in fips.yaml).
const (
	DefaultEtherType = wire.EtherTypeFIPS
	// MinEtherType: below 0x0600 the field is an 802.3 length.
	MinEtherType   = 0x0600
	DefaultBufSize = 2 << 20 // SO_RCVBUF and SO_SNDBUF request
	// DefaultBeaconInterval and MinBeaconInterval are upstream's; a
	// shorter interval is raised to the minimum, as upstream does.
	DefaultBeaconInterval = 30 * time.Second
	MinBeaconInterval     = 10 * time.Second
	MaxBeaconInterval     = 24 * time.Hour

	// HeaderSize is the data frame header: type and u16 LE length.
	HeaderSize = wire.EthernetDataHeaderSize
	// MinMTU is the smallest MTU that can carry handshake msg1.
	MinMTU = wire.FMPMsg1Size
	MaxMTU = 65535 - HeaderSize
	// PreStartMTU is what MTU reports before Start has read the
	// interface's, as upstream's does.
	PreStartMTU = 1499
	// RecvHeadroom is how far past MTU+3 a received frame may run.
	RecvHeadroom = 100

	// NeighbourLimit bounds the beacon-learned neighbours awaiting the
	// node's poll; NeighbourExpiry drops those it did not take in time.
	NeighbourLimit  = 1024
	NeighbourExpiry = 2 * time.Minute

	// Batch sizes: frames per recvmmsg and per sendmmsg.
	RecvBatch = 32
	SendBatch = 32

	errRunPause = 8
	errPause    = 10 * time.Millisecond
)

// Options configure one Ethernet transport instance. Start from Defaults.
type Options struct {
	// Interface is the network interface ("eth0"). Required.
	Interface string
	// EtherType is the frames' EtherType, MinEtherType..0xffff.
	EtherType uint16
	// MTU caps the FMP packet size; 0 means the interface MTU minus 3.
	// It never exceeds the interface MTU minus 3.
	MTU int
	// RecvBufSize and SendBufSize are requested for SO_RCVBUF/SO_SNDBUF;
	// 0 leaves the OS default.
	RecvBufSize, SendBufSize int
	// Listen learns neighbours from beacons; Announce broadcasts ours
	// every BeaconInterval (raised to MinBeaconInterval).
	Listen, Announce bool
	// AutoConnect dials learned neighbours; AcceptConnections admits
	// inbound handshakes from strangers.
	AutoConnect, AcceptConnections bool
	BeaconInterval                 time.Duration
	// Key is the node's x-only public key, which master's beacons carry.
	// Announce without it logs a warning and sends none of them, as
	// upstream.
	Key *identity.PublicKey
	// Beacons is which upstream line's beacons Announce broadcasts:
	// master's 34-byte ones carrying Key (the zero value), next's 5-byte
	// keyless ones, or both in one batch each interval (docs/next.md
	// §12.2), so that neighbours of either line find the node.
	Beacons BeaconFormats
	// Next also carries upstream next's data frames (docs/next.md §12.2):
	// received ones are told from master's by their version-1 FMP byte
	// (wire.EthernetDataVersion), and a version-1 packet is sent behind
	// next's 4-byte header [0][flags 0][len LE], a version-0 one behind
	// master's 3-byte header. The MTU is then the interface's minus 4 for
	// both. next's beacons carry no key: with Listen they are counted
	// (beacons_keyless) and their MACs handed to the node as keyless
	// neighbours, which it may dial anonymously over XX.
	Next bool
}

// BeaconFormats is a set of beacon formats (Options.Beacons).
type BeaconFormats uint8

// Beacon formats: master's, with the node's key, and next's keyless one.
// The zero value means BeaconsMaster.
const (
	BeaconsMaster BeaconFormats = 1 << iota
	BeaconsNext
	BeaconsBoth = BeaconsMaster | BeaconsNext
)

// beacons is the set Announce sends (the zero value: master's).
func (o Options) beacons() BeaconFormats {
	if o.Beacons == 0 {
		return BeaconsMaster
	}
	return o.Beacons
}

// headerRoom is the bytes a data frame needs around the FMP packet: the
// larger header of the formats carried.
func (o Options) headerRoom() int {
	if o.Next {
		return wire.EthernetV1HeaderSize
	}
	return HeaderSize
}

// Defaults returns upstream's defaults (listen on; announce,
// auto_connect and accept_connections off).
func Defaults() Options {
	return Options{EtherType: DefaultEtherType, RecvBufSize: DefaultBufSize, SendBufSize: DefaultBufSize,
		Listen: true, BeaconInterval: DefaultBeaconInterval}
}

// Validate reports the first problem with o.
func (o Options) Validate() error {
	if o.Interface == "" || len(o.Interface) >= 16 || strings.ContainsAny(o.Interface, "/ \x00") {
		return fmt.Errorf("ethernet: invalid interface name %q (1 to 15 bytes, no '/', space or NUL)", o.Interface)
	}
	if o.EtherType < MinEtherType {
		return fmt.Errorf("ethernet: ethertype 0x%04x out of range [0x%04x, 0xffff]", o.EtherType, MinEtherType)
	}
	if o.MTU != 0 && (o.MTU < MinMTU || o.MTU > MaxMTU) {
		return fmt.Errorf("ethernet: mtu %d out of range [%d, %d] (or 0: the interface's)", o.MTU, MinMTU, MaxMTU)
	}
	if o.RecvBufSize < 0 || o.SendBufSize < 0 || o.RecvBufSize > 1<<30 || o.SendBufSize > 1<<30 {
		return fmt.Errorf("ethernet: socket buffer size out of range [0, 1 GiB] (recv %d, send %d)", o.RecvBufSize, o.SendBufSize)
	}
	if o.BeaconInterval < 0 || o.BeaconInterval > MaxBeaconInterval {
		return fmt.Errorf("ethernet: beacon interval %s out of range [0, %s]", o.BeaconInterval, MaxBeaconInterval)
	}
	if o.Beacons&^BeaconsBoth != 0 {
		return fmt.Errorf("ethernet: beacon formats 0x%02x out of range (master 0x01, next 0x02)", uint8(o.Beacons))
	}
	return nil
}

// beaconInterval is the interval clamped to upstream's minimum.
func (o Options) beaconInterval() time.Duration { return max(o.BeaconInterval, MinBeaconInterval) }

// Transport is an Ethernet transport instance. It implements
// transport.Transport, transport.Batched and transport.Discoverer.
type Transport struct {
	id   transport.ID
	name string
	opts Options
	log  *slog.Logger

	// open opens the link (openLink; tests substitute one).
	open func(iface string, ethertype uint16, rcvbuf, sndbuf int) (link, error)
	// beaconEvery is the beacon interval (Options' clamped; tests
	// shorten it).
	beaconEvery time.Duration

	mu      sync.Mutex
	state   transport.State
	link    link
	stopCtx func() bool
	stop    chan struct{}
	wg      sync.WaitGroup
	dp      transport.DataPath

	// live is the started link senders write to; nil before Start and
	// after Close.
	live   atomic.Pointer[linkRef]
	closed atomic.Bool
	mtu    atomic.Int64
	mac    atomic.Pointer[transport.MAC]

	stats                    transport.Counters
	beaconsSent, beaconsRecv atomic.Uint64
	beaconsKeyless           atomic.Uint64 // next's beacons (Options.Next), which name no key
	bufs                     *transport.BufferPool

	nmu        sync.Mutex
	neighbours *transport.Neighbours

	// smu guards send, the queue Send uses.
	smu  sync.Mutex
	send *sender
}

// linkRef boxes the link interface for an atomic pointer.
type linkRef struct{ l link }

var (
	_ transport.Transport  = (*Transport)(nil)
	_ transport.Batched    = (*Transport)(nil)
	_ transport.Discoverer = (*Transport)(nil)
)

// New validates opts and returns a transport in StateConfigured. A nil
// log means slog.Default().
func New(id transport.ID, name string, opts Options, log *slog.Logger) (*Transport, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log = transport.Logger(log, "ethernet", id, name)
	t := &Transport{id: id, name: name, opts: opts, log: log, state: transport.StateConfigured, open: openLink,
		neighbours: transport.NewNeighbours(NeighbourLimit, NeighbourExpiry), beaconEvery: opts.beaconInterval()}
	t.mtu.Store(PreStartMTU)
	return t, nil
}

// ID implements transport.Transport.
func (t *Transport) ID() transport.ID { return t.id }

// Type implements transport.Transport.
func (t *Transport) Type() string { return "ethernet" }

// Name implements transport.Transport.
func (t *Transport) Name() string { return t.name }

// Interface is the interface the transport is bound to: the first half
// of an "interface/mac" peer address.
func (t *Transport) Interface() string { return t.opts.Interface }

// MTU implements transport.Transport: the interface MTU minus 3 (or the
// configured MTU when smaller) once started.
func (t *Transport) MTU() int { return int(t.mtu.Load()) }

// EtherType is the frames' EtherType (the XDP program is told it).
func (t *Transport) EtherType() uint16 { return t.opts.EtherType }

// LinkMTU implements transport.Transport: one MTU for the whole link.
func (t *Transport) LinkMTU(transport.Addr) int { return t.MTU() }

// LocalAddr implements transport.Transport: upstream shows no local
// address for Ethernet (see LocalMAC).
func (t *Transport) LocalAddr() string { return "" }

// LocalMAC is the interface's MAC once started, else the zero MAC.
func (t *Transport) LocalMAC() transport.MAC {
	if m := t.mac.Load(); m != nil {
		return *m
	}
	return transport.MAC{}
}

// State implements transport.Transport.
func (t *Transport) State() transport.State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// AcceptConnections implements transport.Transport.
func (t *Transport) AcceptConnections() bool { return t.opts.AcceptConnections }

// AutoConnect implements transport.Discoverer.
func (t *Transport) AutoConnect() bool { return t.opts.AutoConnect }

// CloseConnection implements transport.Transport; there is no
// per-address state.
func (t *Transport) CloseConnection(transport.Addr) {}

// Stats implements transport.Transport. KernelDrops are the frames the
// kernel dropped for a full receive buffer (PACKET_STATISTICS, read and
// added up here).
func (t *Transport) Stats() transport.Stats {
	if r := t.live.Load(); r != nil {
		if d, err := r.l.drops(); err == nil {
			t.stats.KernelDrops.Add(d)
		}
	}
	s := t.stats.Snapshot()
	s.BeaconsSent, s.BeaconsRecv, s.BeaconsKeyless = t.beaconsSent.Load(), t.beaconsRecv.Load(), t.beaconsKeyless.Load()
	t.nmu.Lock()
	s.NeighboursRefused = t.neighbours.Refused
	t.nmu.Unlock()
	return s
}

// Discover implements transport.Discoverer: the neighbours whose beacons
// arrived since the last call (none unless listen is on).
func (t *Transport) Discover(now time.Time, dst []transport.Neighbour) []transport.Neighbour {
	t.nmu.Lock()
	defer t.nmu.Unlock()
	return t.neighbours.Take(now, dst)
}

// AttachDataPath implements transport.Batched; call it before Start.
func (t *Transport) AttachDataPath(dp transport.DataPath) {
	t.mu.Lock()
	t.dp = dp
	t.mu.Unlock()
}

// Start opens the packet socket on the interface (looked up in the
// calling thread's network namespace), starts the reader and, when
// announce is on, the beacon sender. They run until ctx ends or Close.
// A failed Start may be retried.
func (t *Transport) Start(ctx context.Context, deliver transport.Deliver) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := transport.CheckStart("ethernet", deliver, t.closed.Load(), t.state); err != nil {
		return err
	}
	t.state = transport.StateStarting
	l, err := t.open(t.opts.Interface, t.opts.EtherType, t.opts.RecvBufSize, t.opts.SendBufSize)
	if err != nil {
		t.state = transport.StateFailed
		return err
	}
	ifMTU := l.ifMTU()
	mtu := ifMTU - t.opts.headerRoom()
	if t.opts.MTU > 0 {
		mtu = min(mtu, t.opts.MTU)
	}
	if mtu < MinMTU {
		l.close()
		t.state = transport.StateFailed
		return fmt.Errorf("ethernet: %s: MTU %d leaves %d bytes per packet, below the %d a handshake needs", t.opts.Interface, ifMTU, mtu, MinMTU)
	}
	mac := l.hwAddr()
	t.mtu.Store(int64(mtu))
	t.mac.Store(&mac)
	t.link = l
	t.bufs = transport.NewBufferPool(mtu + RecvHeadroom)
	ref := &linkRef{l}
	t.smu.Lock()
	t.send = t.newSender(ref, SendBatch)
	t.smu.Unlock()
	t.live.Store(ref)
	t.stop = make(chan struct{})
	t.wg.Add(1)
	go t.readLoop(l, deliver, t.dp)
	if t.opts.Announce {
		if beacons := t.beaconFrames(); len(beacons) > 0 {
			t.wg.Add(1)
			go t.beaconLoop(beacons, t.beaconEvery, t.stop)
		}
	}
	t.stopCtx = context.AfterFunc(ctx, func() { t.Close() })
	t.state = transport.StateUp
	t.log.Info("Ethernet transport started", "interface", t.opts.Interface, "mac", mac.String(),
		"mtu", mtu, "if_mtu", ifMTU)
	return nil
}

// isClosed reports whether err means the socket was closed: a closed
// os.File's raw read or write answers with an internal "use of closed
// file" error, so the transport's own flag decides.
func (t *Transport) isClosed(err error) bool {
	return t.closed.Load() || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed)
}

// readLoop delivers frames until the socket is closed.
func (t *Transport) readLoop(l link, deliver transport.Deliver, dp transport.DataPath) {
	defer t.wg.Done()
	var w transport.DataWorker
	if dp != nil {
		w = dp.NewWorker()
		defer w.Close()
	}
	// One byte over the limit shows an oversize frame.
	size := int(t.mtu.Load()) + HeaderSize + RecvHeadroom + 1
	fs := make([]frame, RecvBatch)
	for i := range fs {
		fs[i].Buf = make([]byte, size)
	}
	errRun := 0
	for {
		n, err := l.readBatch(fs)
		if err != nil {
			if t.isClosed(err) {
				return
			}
			if errors.Is(err, errLinkDown) {
				if l = t.relink(l); l == nil {
					return
				}
				continue
			}
			t.stats.RecvErrors.Add(1)
			t.log.Warn("Ethernet receive error", "error", err)
			if errRun++; errRun >= errRunPause {
				time.Sleep(errPause)
			}
			continue
		}
		errRun = 0
		arrived := time.Now().UnixNano()
		for i := range n {
			t.handle(&fs[i], size-1, arrived, w, deliver)
		}
		if w != nil {
			w.Flush()
		}
	}
}

// handle is one received frame: a data frame's packet goes to the worker
// or the node, a beacon to the neighbour buffer; anything else is
// counted as invalid.
func (t *Transport) handle(f *frame, limit int, arrived int64, w transport.DataWorker, deliver transport.Deliver) {
	if f.Outgoing {
		return
	}
	b := f.Buf[:f.N]
	t.stats.PacketsRecv.Add(1)
	t.stats.BytesRecv.Add(uint64(len(b)))
	if f.Trunc || len(b) > limit || len(b) == 0 {
		t.stats.DroppedInvalid.Add(1)
		return
	}
	switch b[0] {
	case wire.EthernetFrameData:
		var d wire.EthernetData
		if t.opts.Next && wire.EthernetDataVersion(b) == wire.FMPVersionNext {
			var err error
			if d, err = wire.ParseEthernetDataV1(b); err != nil {
				t.dropInvalid(f, b, "dropping invalid Ethernet data frame")
				return
			}
		} else {
			// Checked first so that garbage costs no error value: the
			// decoder's errors are built only for the debug line.
			if len(b) < HeaderSize || HeaderSize+int(binary.LittleEndian.Uint16(b[1:])) > len(b) {
				t.dropInvalid(f, b, "dropping invalid Ethernet data frame")
				return
			}
			d, _ = wire.ParseEthernetData(b)
		}
		p := transport.Packet{Transport: t.id, From: transport.AddrFromMAC(f.MAC), Data: d.Packet, Arrived: arrived}
		switch dataplane.Offer(w, t.bufs, deliver, p) {
		case dataplane.Refused:
			t.stats.DroppedQueue.Add(1)
		case dataplane.TooLarge:
			t.stats.DroppedInvalid.Add(1)
		}
	case wire.EthernetFrameBeacon:
		t.beaconsRecv.Add(1)
		if !t.opts.Listen {
			return
		}
		if t.opts.Next {
			if format, ok := wire.EthernetBeaconFormat(b); ok && format == wire.FMPVersionNext {
				// next's: a MAC without a key, which only an anonymous
				// XX dial can reach (the node decides whether to).
				t.beaconsKeyless.Add(1)
				t.nmu.Lock()
				t.neighbours.AddKeyless(time.Now(), transport.AddrFromMAC(f.MAC))
				t.nmu.Unlock()
				return
			}
		}
		if len(b) < wire.EthernetBeaconSize || b[1] != wire.EthernetBeaconVersion {
			t.dropInvalid(f, b, "dropping invalid Ethernet beacon")
			return
		}
		bc, _ := wire.ParseEthernetBeacon(b)
		key, err := identity.ParsePublicKey(bc.XOnly) // not a curve point: an error (rare)
		if err != nil {
			t.dropInvalid(f, b, "dropping invalid Ethernet beacon")
			return
		}
		t.nmu.Lock()
		t.neighbours.Add(time.Now(), transport.AddrFromMAC(f.MAC), key)
		t.nmu.Unlock()
	default:
		t.dropInvalid(f, b, "Unknown frame type, dropping")
	}
}

// dropInvalid counts a frame dropped for its framing and, when debug is
// on, says why (the decoders' error, built only then).
func (t *Transport) dropInvalid(f *frame, b []byte, msg string) {
	t.stats.DroppedInvalid.Add(1)
	if !t.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	var err error
	switch b[0] {
	case wire.EthernetFrameData:
		_, err = wire.ParseEthernetData(b)
	case wire.EthernetFrameBeacon:
		var bc wire.EthernetBeacon
		if bc, err = wire.ParseEthernetBeacon(b); err == nil {
			_, err = identity.ParsePublicKey(bc.XOnly)
		}
	}
	t.log.Debug(msg, "remote_mac", f.MAC.String(), "frame_type", b[0], "error", err)
}

// relinkRetry is how often relink looks for an interface that went away.
const relinkRetry = time.Second

// relink follows the interface after old's socket reported it down. The
// same interface (set down, not deleted) needs nothing: old's socket
// resumes when it is up again, and relink returns old once it is (a
// deleted interface goes down first: until it is up again it may yet
// turn out deleted, and old would never resume). An interface
// deleted and created again under its name (a veth recreated) has a new
// index: relink opens a socket on it, every sender and the beacon
// sender move to it, and old is closed; until it exists again relink
// tries every relinkRetry. Upstream reopens its beacon socket alone,
// after three ENXIO sends. The interface is looked up in the namespace
// of the reader's thread: the process's, for the daemon. nil: the
// transport was closed.
func (t *Transport) relink(old link) link {
	t.stats.RecvErrors.Add(1)
	t.log.Warn("Ethernet interface down", "interface", t.opts.Interface)
	for {
		l, err := t.open(t.opts.Interface, t.opts.EtherType, t.opts.RecvBufSize, t.opts.SendBufSize)
		if err == nil && l.index() == old.index() {
			l.close()
			if l.up() {
				return old
			}
		} else if err == nil {
			t.mu.Lock()
			if t.closed.Load() {
				t.mu.Unlock()
				l.close()
				return nil
			}
			mac := l.hwAddr()
			t.link = l
			t.mac.Store(&mac)
			t.live.Store(&linkRef{l})
			t.mu.Unlock()
			old.close()
			if mtu := l.ifMTU() - HeaderSize; mtu < t.MTU() {
				t.log.Warn("recreated interface has a smaller MTU; packets over it are lost", "interface", t.opts.Interface, "mtu", t.MTU(), "if_mtu", l.ifMTU())
			}
			t.log.Info("Ethernet socket reopened on the recreated interface", "interface", t.opts.Interface, "mac", mac.String())
			return l
		}
		select {
		case <-t.stop:
			return nil
		case <-time.After(relinkRetry):
		}
	}
}

// beaconFrames builds the broadcast frames of the configured beacon
// formats: master's first (it needs the key: without one it is left out
// with upstream's warning), then next's.
func (t *Transport) beaconFrames() []frame {
	var fs []frame
	formats := t.opts.beacons()
	if formats&BeaconsMaster != 0 {
		if t.opts.Key == nil {
			t.log.Warn("Announce enabled but no local pubkey set; beacons disabled")
		} else {
			buf := make([]byte, wire.EthernetBeaconSize)
			if _, err := (wire.EthernetBeacon{XOnly: t.opts.Key[:]}).MarshalTo(buf); err != nil {
				t.log.Error("cannot build beacon", "error", err)
			} else {
				fs = append(fs, frame{Buf: buf, MAC: transport.BroadcastMAC})
			}
		}
	}
	if formats&BeaconsNext != 0 {
		fs = append(fs, frame{Buf: wire.AppendEthernetBeaconV1(nil), MAC: transport.BroadcastMAC})
	}
	return fs
}

// beaconLoop broadcasts the beacons fs at once and then every interval
// until stop closes, on the transport's current socket.
func (t *Transport) beaconLoop(fs []frame, interval time.Duration, stop <-chan struct{}) {
	defer t.wg.Done()
	var ref *linkRef
	var w frameWriter
	failing := 0
	send := func() {
		r := t.live.Load()
		if r == nil {
			return
		}
		if r != ref {
			ref, w = r, r.l.newWriter(len(fs))
		}
		sent, err := w.writeBatch(fs)
		t.beaconsSent.Add(uint64(sent))
		if err != nil {
			if t.isClosed(err) {
				return
			}
			t.stats.SendErrors.Add(1)
			if failing++; failing == 1 { // the first of a streak
				t.log.Warn("Failed to send beacon", "error", err)
			}
			return
		}
		if failing > 0 {
			t.log.Debug(fmt.Sprintf("Beacon send recovered after %d errors", failing))
		}
		failing = 0
	}
	send()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			send()
		}
	}
}

// NewSender implements transport.Batched: a send queue of its own on the
// transport's socket, for one worker.
func (t *Transport) NewSender() (transport.Sender, error) {
	r := t.live.Load()
	if r == nil {
		return nil, fmt.Errorf("ethernet: sender: %w", transport.ErrNotStarted)
	}
	return t.newSender(r, SendBatch), nil
}

// sender is one goroutine's send queue: preallocated frames of MTU+3
// bytes, flushed with one sendmmsg.
type sender struct {
	t     *Transport
	ref   *linkRef // the link w writes to: relink replaces the transport's
	w     frameWriter
	slots [][]byte
	fs    []frame
	n     int
	bytes uint64
}

func (t *Transport) newSender(r *linkRef, batch int) *sender {
	size := int(t.mtu.Load()) + t.opts.headerRoom()
	s := &sender{t: t, ref: r, w: r.l.newWriter(batch), slots: make([][]byte, batch), fs: make([]frame, batch)}
	for i := range s.slots {
		s.slots[i] = make([]byte, size)
	}
	return s
}

// Reserve implements transport.Reserver: it queues an n-byte packet to
// `to` (a MAC address) and returns its bytes, after the frame header.
func (s *sender) Reserve(to transport.Addr, n int) ([]byte, error) {
	t := s.t
	if t.live.Load() == nil {
		return nil, fmt.Errorf("ethernet: send: %w", transport.ErrClosed)
	}
	if mtu := t.MTU(); n > mtu {
		t.stats.MTUExceeded.Add(1)
		return nil, &transport.MTUError{Size: n, MTU: mtu}
	}
	if to.IP.IsValid() || to.MAC.IsZero() || n < 0 {
		t.stats.SendErrors.Add(1)
		return nil, fmt.Errorf("ethernet: send to %s: %w", to, transport.ErrInvalidAddress)
	}
	if s.n == len(s.fs) {
		s.Flush()
	}
	b := s.slots[s.n][:HeaderSize+n]
	b[0] = wire.EthernetFrameData
	binary.LittleEndian.PutUint16(b[1:], uint16(n))
	s.fs[s.n] = frame{Buf: b, MAC: to.MAC}
	s.n++
	s.bytes += uint64(len(b))
	return b[HeaderSize:], nil
}

// nextHeader gives queued frame i next's 4-byte header when its packet
// is version 1 (written behind master's 3-byte one by Reserve, before
// the caller's packet said which): the packet moves one byte on, within
// its slot, which has the room.
func (s *sender) nextHeader(i int) uint64 {
	b := s.fs[i].Buf
	if len(b) <= HeaderSize || b[HeaderSize]>>4 != wire.FMPVersionNext {
		return 0
	}
	n := len(b) - HeaderSize
	b = s.slots[i][:wire.EthernetV1HeaderSize+n]
	copy(b[wire.EthernetV1HeaderSize:], b[HeaderSize:HeaderSize+n])
	b[1] = 0
	binary.LittleEndian.PutUint16(b[2:], uint16(n))
	s.fs[i].Buf = b
	return 1
}

// Flush implements transport.Sender. Frames the kernel refuses are
// counted as send errors.
func (s *sender) Flush() { _ = s.flush() }

// flush sends the queue, counts it and returns the first error.
func (s *sender) flush() error {
	if s.n == 0 {
		return nil
	}
	t, queued, bytes := s.t, s.n, s.bytes
	s.n, s.bytes = 0, 0
	if t.opts.Next {
		for i := range s.fs[:queued] {
			bytes += s.nextHeader(i)
		}
	}
	if r := t.live.Load(); r != nil && r != s.ref { // the interface was recreated
		s.ref, s.w = r, r.l.newWriter(len(s.fs))
	}
	sent, err := s.w.writeBatch(s.fs[:queued])
	t.stats.CountBatch(queued, sent, bytes)
	if err != nil && !t.isClosed(err) {
		t.log.Debug("Ethernet batch send", "queued", queued, "sent", sent, "error", err)
	}
	return err
}

// Close implements transport.Sender.
func (s *sender) Close() { s.Flush() }

// Send transmits one FMP packet to a MAC address. It fails with
// *transport.MTUError when pkt is larger than the MTU.
func (t *Transport) Send(to transport.Addr, pkt []byte) error {
	t.smu.Lock()
	defer t.smu.Unlock()
	s := t.send
	if s == nil || t.live.Load() == nil {
		if t.closed.Load() {
			return fmt.Errorf("ethernet: send: %w", transport.ErrClosed)
		}
		return fmt.Errorf("ethernet: send: %w", transport.ErrNotStarted)
	}
	b, err := s.Reserve(to, len(pkt))
	if err != nil {
		return err
	}
	copy(b, pkt)
	if err := s.flush(); err != nil {
		if t.isClosed(err) {
			return fmt.Errorf("ethernet: send: %w", transport.ErrClosed)
		}
		return fmt.Errorf("ethernet: send to %s: %w", to, err)
	}
	return nil
}

// ResolveAddr turns a peer address into a MAC: upstream's
// "interface/aa:bb:cc:dd:ee:ff" (the interface must be this transport's)
// or a bare MAC.
func (t *Transport) ResolveAddr(_ context.Context, s string) (transport.Addr, error) {
	macStr := s
	if iface, m, ok := strings.Cut(s, "/"); ok {
		if iface != t.opts.Interface {
			return transport.Addr{}, fmt.Errorf("ethernet: %q is on interface %q, this transport is on %q: %w", s, iface, t.opts.Interface, transport.ErrInvalidAddress)
		}
		macStr = m
	}
	mac, err := transport.ParseMAC(macStr)
	if err != nil {
		return transport.Addr{}, fmt.Errorf("ethernet: invalid MAC in '%s': %w", s, err)
	}
	if mac.IsZero() {
		return transport.Addr{}, fmt.Errorf("ethernet: destination MAC is all zeros: %w", transport.ErrInvalidAddress)
	}
	return transport.AddrFromMAC(mac), nil
}

// Close stops the goroutines, closes the socket and waits. It is
// idempotent; a closed transport cannot be restarted.
func (t *Transport) Close() error {
	defer t.wg.Wait() // the reader and the beacon sender, after the lock
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Swap(true) {
		return nil
	}
	t.state = transport.StateDown
	t.live.Store(nil)
	if t.stopCtx != nil {
		t.stopCtx()
	}
	if t.stop != nil {
		close(t.stop)
	}
	l := t.link
	if l == nil {
		return nil
	}
	t.link = nil
	t.log.Info("Ethernet transport stopped", "interface", t.opts.Interface)
	return l.close()
}
