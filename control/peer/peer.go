package peer

import (
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// Direction says which side dialed the link the peer runs on.
type Direction string

// Link directions.
const (
	Inbound  Direction = "inbound"
	Outbound Direction = "outbound"
)

// Peer is an authenticated, active neighbour.
type Peer struct {
	PublicKey identity.PublicKey
	NodeAddr  identity.NodeAddr
	Alias     string
	LinkID    uint64
	Transport transport.ID
	Addr      transport.Addr
	Direction Direction
	Epoch     noise.Epoch // the peer's restart epoch

	Since  time.Time // promotion
	lastHB time.Time
	// hot are the per-packet counters (LastRecv, LastSent, Stats), which
	// dataplane workers update too.
	hot hotCounters

	cur, prev      *linkSession
	rekeyCands     []*unproven // rekeys we answered, awaiting their first frame
	prevDrainUntil time.Time
	kbit           bool
	rekey          *leg // our rekey handshake in flight
	dampenUntil    time.Time

	msg1Bucket ratelimit.Bucket // msg1 from this peer's address (rekeys, restarts)
	// stats holds the loop-only counters (Rekeys, Roams); Stats() adds
	// the hot ones.
	stats PeerStats

	mmp *mmp.Link // link metrics: RTT, loss, ETX → link cost

	pq linkPQ // the post-quantum upgrade (pq.go)
	// v1: the link runs upstream next's format (FMP version 1, XX);
	// profile is what the peer declared in it.
	v1      bool
	profile wire.NodeProfile
	// rekeyMsg3 is our last v1 rekey's msg3, resent (handshake backoff,
	// up to handshake_max_resends) until a frame authenticates under the
	// new session: the responder has it only once msg3 arrives.
	rekeyMsg3     []byte
	rekeyMsg3Next time.Time
	rekeyMsg3Sent int
}

// MMP is the peer's link metrics.
func (p *Peer) MMP() *mmp.Link { return p.mmp }

// PeerStats are per-peer counters.
type PeerStats struct {
	PacketsSent     uint64 `json:"packets_sent"`
	PacketsRecv     uint64 `json:"packets_recv"`
	BytesSent       uint64 `json:"bytes_sent"`
	BytesRecv       uint64 `json:"bytes_recv"`
	DecryptFailures uint64 `json:"decrypt_failures"`
	Replays         uint64 `json:"replays"`
	Rekeys          uint64 `json:"rekeys"`
	Roams           uint64 `json:"roams"`
}

// linkSession is one Noise transport session of a peer.
type linkSession struct {
	s          *noise.Session
	ourIndex   uint32
	theirIndex uint32
	start      time.Time // timestamp base; rekey age
	rekeyAt    time.Time // start + RekeyAfter + jitter
	kbit       bool
	pq         bool // keys from a post-quantum upgrade (pq.go)
	v1         bool // frames carry FMP version 1
	// heard: a frame authenticated under this session (what ends a v1
	// rekey msg3's resends); set by the loop and the workers.
	heard atomic.Bool
}

// KBit is the current key-epoch parity bit.
func (p *Peer) KBit() bool { return p.kbit }

// RekeyInProgress reports whether a rekey handshake or cutover is pending.
func (p *Peer) RekeyInProgress() bool { return p.rekey != nil || len(p.rekeyCands) > 0 }

// Draining reports whether the previous session is still accepted.
func (p *Peer) Draining() bool { return p.prev != nil }

// OurIndex and TheirIndex are the current session's receiver indices.
func (p *Peer) OurIndex() uint32   { return p.cur.ourIndex }
func (p *Peer) TheirIndex() uint32 { return p.cur.theirIndex }

// SendCounter is the next counter of the current session.
func (p *Peer) SendCounter() uint64 { return p.cur.s.Send().Nonce() }

// SessionStart is when the current session began (link timestamp base).
func (p *Peer) SessionStart() time.Time { return p.cur.start }

// String is the short form used in logs.
func (p *Peer) String() string {
	if p.Alias != "" {
		return p.Alias + "(" + p.NodeAddr.Short() + ")"
	}
	return p.NodeAddr.Short()
}

// HighestRecv is the highest counter accepted on the current session.
func (p *Peer) HighestRecv() uint64 { return p.cur.s.HighestRecv() }
