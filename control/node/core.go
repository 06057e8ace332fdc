package node

import (
	"io"
	"log/slog"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// Env is what a Core needs from packet I/O: the node's transports, or the
// in-process mesh harness's simulated links.
type Env = peer.Env

// CoreOptions configure a Core.
type CoreOptions struct {
	Identity *identity.Identity
	Peer     peer.Config
	ACL      *peer.ACL
	Log      *slog.Logger
	Rand     io.Reader // nil: crypto/rand
}

// Core is a node's mesh state machine: the link layer and everything
// above it, with no goroutines, sockets or clock of its own. Node runs one
// on its event loop; the in-process harness runs thousands on a simulated
// clock. Every method must be called from one goroutine.
type Core struct {
	id    *identity.Identity
	log   *slog.Logger
	peers *peer.Manager

	linkMsgs map[wire.MsgType]uint64 // link messages handed up, by type
	dirty    bool                    // peers came or went since the last snapshot
}

// NewCore builds a Core whose packets leave through env.
func NewCore(o CoreOptions, env Env) (*Core, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	c := &Core{id: o.Identity, log: o.Log, linkMsgs: map[wire.MsgType]uint64{}}
	pm, err := peer.New(o.Peer, o.Identity, env, c, o.Log, o.Rand)
	if err != nil {
		return nil, err
	}
	pm.SetACL(o.ACL)
	c.peers = pm
	return c, nil
}

// Identity is the node's identity.
func (c *Core) Identity() *identity.Identity { return c.id }

// Peers is the link layer.
func (c *Core) Peers() *peer.Manager { return c.peers }

// HandlePacket processes one received packet.
func (c *Core) HandlePacket(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	c.peers.HandlePacket(now, t, from, pkt)
}

// Tick runs every subsystem's timers.
func (c *Core) Tick(now time.Time) {
	c.peers.Tick(now)
}

// PeerUp implements peer.Upper.
func (c *Core) PeerUp(p *peer.Peer) { c.dirty = true }

// PeerDown implements peer.Upper.
func (c *Core) PeerDown(p *peer.Peer, why string) { c.dirty = true }

// LinkMessage implements peer.Upper: it dispatches authenticated link
// messages to the subsystem that owns their type.
func (c *Core) LinkMessage(p *peer.Peer, flags uint8, ts uint32, msg []byte) {
	c.linkMsgs[wire.MsgType(msg[0])]++
}
