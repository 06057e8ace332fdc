package node

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/tree"
	"github.com/fips-go/fips/control/wire"
)

// Env is what a Core needs from packet I/O: the node's transports, or the
// in-process mesh harness's simulated links.
type Env = peer.Env

// CoreOptions configure a Core.
type CoreOptions struct {
	Identity *identity.Identity
	Peer     peer.Config
	Tree     tree.Config  // zero: tree.DefaultConfig()
	Bloom    bloom.Config // zero: bloom.DefaultConfig()
	ACL      *peer.ACL
	Log      *slog.Logger
	Rand     io.Reader // nil: crypto/rand
}

// Core is a node's mesh state machine: the link layer, the spanning tree
// and the bloom filters, with no goroutines, sockets or clock of its own.
// Node runs one on its event loop; the in-process harness runs thousands
// on a simulated clock. Every method must be called from one goroutine.
type Core struct {
	id    *identity.Identity
	log   *slog.Logger
	peers *peer.Manager
	tree  *tree.Tree
	bloom *bloom.State

	// now is the time of the event being handled: the subsystems' callbacks
	// (PeerUp, SendTreeAnnounce, …) carry no time of their own.
	now time.Time

	linkMsgs map[wire.MsgType]uint64 // link messages handed up, by type
	rejected map[string]uint64       // tree/bloom messages refused, by reason
	dirty    bool                    // peers came or went since the last snapshot
}

// NewCore builds a Core whose packets leave through env.
func NewCore(now time.Time, o CoreOptions, env Env) (*Core, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Tree == (tree.Config{}) {
		o.Tree = tree.DefaultConfig()
	}
	if o.Bloom == (bloom.Config{}) {
		o.Bloom = bloom.DefaultConfig()
	}
	c := &Core{id: o.Identity, log: o.Log, now: now,
		linkMsgs: map[wire.MsgType]uint64{}, rejected: map[string]uint64{}}
	pm, err := peer.New(o.Peer, o.Identity, env, c, o.Log, o.Rand)
	if err != nil {
		return nil, err
	}
	pm.SetACL(o.ACL)
	c.peers = pm
	c.tree = tree.New(now, o.Identity, o.Tree, coreTreeEnv{c}, o.Log, o.Rand)
	c.tree.SetNotifier(c)
	c.bloom = bloom.New(o.Identity.NodeAddr(), o.Bloom, coreBloomEnv{c}, o.Log)
	return c, nil
}

// Identity is the node's identity.
func (c *Core) Identity() *identity.Identity { return c.id }

// Peers is the link layer.
func (c *Core) Peers() *peer.Manager { return c.peers }

// Tree is the spanning tree.
func (c *Core) Tree() *tree.Tree { return c.tree }

// Bloom is the bloom-filter state.
func (c *Core) Bloom() *bloom.State { return c.bloom }

// HandlePacket processes one received packet.
func (c *Core) HandlePacket(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	c.now = now
	c.peers.HandlePacket(now, t, from, pkt)
}

// Tick runs every subsystem's timers, in upstream's order.
func (c *Core) Tick(now time.Time) {
	c.now = now
	c.peers.Tick(now)
	c.tree.Tick(now)
	c.bloom.Tick(now)
}

// PeerUp implements peer.Upper.
func (c *Core) PeerUp(p *peer.Peer) {
	c.dirty = true
	c.tree.PeerUp(c.now, p.NodeAddr)
	c.bloom.PeerUp(c.now, p.NodeAddr)
}

// PeerDown implements peer.Upper.
func (c *Core) PeerDown(p *peer.Peer, why string) {
	c.dirty = true
	c.tree.PeerDown(c.now, p.NodeAddr)
	c.bloom.PeerDown(c.now, p.NodeAddr)
}

// LinkMessage implements peer.Upper: it dispatches authenticated link
// messages to the subsystem that owns their type.
func (c *Core) LinkMessage(p *peer.Peer, flags uint8, ts uint32, msg []byte) {
	t := wire.MsgType(msg[0])
	c.linkMsgs[t]++
	var err error
	switch t {
	case wire.MsgTreeAnnounce:
		err = c.tree.HandleAnnounce(c.now, p.NodeAddr, msg)
	case wire.MsgFilterAnnounce:
		err = c.bloom.HandleFilterAnnounce(c.now, p.NodeAddr, msg)
	}
	if err != nil {
		c.countReject(t, err)
	}
}

// countReject records why a message was refused (the subsystems count
// too; this keeps one place the node can log from).
func (c *Core) countReject(t wire.MsgType, err error) {
	var tr *tree.RejectError
	var br *bloom.RejectError
	switch {
	case errors.As(err, &tr):
		c.rejected["tree_"+tr.Reason.String()]++
	case errors.As(err, &br):
		c.rejected["bloom_"+br.Reason.String()]++
	default:
		c.rejected[t.String()]++
	}
	c.log.Debug("link message refused", "type", t.String(), "error", err)
}

// TreeChanged implements tree.Notifier: what a tree transition means for
// the bloom filters (and, with routing, the coordinate cache).
func (c *Core) TreeChanged(now time.Time, ch tree.Change) {
	switch ch.Bloom() {
	case tree.BloomAll:
		c.bloom.MarkAll(now)
	case tree.BloomChanged:
		c.bloom.MarkChanged(now, ch.From)
	}
}

// coreTreeEnv adapts the link layer for the tree.
type coreTreeEnv struct{ c *Core }

func (e coreTreeEnv) SendTreeAnnounce(peerAddr identity.NodeAddr, msg []byte) error {
	p := e.c.peers.Peer(peerAddr)
	if p == nil {
		return tree.ErrPeerNotFound
	}
	return e.c.peers.SendLink(e.c.now, p, 0, msg)
}

// LinkCost: no MMP yet, so every link costs 1.0 and is unmeasured; the
// tree then ranks by depth alone (upstream's cold start).
func (e coreTreeEnv) LinkCost(identity.NodeAddr) (float64, bool) { return 1.0, false }

func (e coreTreeEnv) PeerKey(peerAddr identity.NodeAddr) (identity.PublicKey, bool) {
	if p := e.c.peers.Peer(peerAddr); p != nil {
		return p.PublicKey, true
	}
	return identity.PublicKey{}, false
}

// coreBloomEnv adapts the link layer and the tree for the filters.
type coreBloomEnv struct{ c *Core }

func (e coreBloomEnv) SendFilterAnnounce(peerAddr identity.NodeAddr, msg []byte) error {
	p := e.c.peers.Peer(peerAddr)
	if p == nil {
		return errors.New("bloom: peer not active")
	}
	return e.c.peers.SendLink(e.c.now, p, 0, msg)
}

func (e coreBloomEnv) IsTreePeer(peerAddr identity.NodeAddr) bool {
	return e.c.tree.IsTreePeer(peerAddr)
}
