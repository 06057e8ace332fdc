package udp

import (
	"errors"
	"net"
	"net/netip"
)

// Sizes.
const (
	// MaxSegments is the most datagrams one GSO message carries (the
	// kernel's UDP_MAX_SEGMENTS is 64 on older kernels, 128 on newer).
	MaxSegments = 64
	// MaxMessage is the largest UDP payload one message can hold.
	MaxMessage = 65507
)

// Message is one received message or one message to send. A received
// message with Segment > 0 holds a run of datagrams of Segment bytes each
// (the last may be shorter), coalesced by the kernel (UDP_GRO); Split walks
// them. A message to send with Segment > 0 is sent as such a run
// (UDP_SEGMENT).
type Message struct {
	Buf []byte // receive: the buffer to fill (its length is the limit); send: the payload
	N   int    // receive: bytes received
	// Addr is the source or destination. A link-local IPv6 address
	// carries its interface as its zone, the decimal index
	// (transport.WithZoneIndex), received and sent alike.
	Addr    netip.AddrPort
	Segment int
	// Trunc reports a received datagram larger than Buf (cut off).
	Trunc bool
	// Stamp is when the kernel received the message (Unix nanoseconds,
	// SO_TIMESTAMPNS), 0 when unknown: the receiver can tell how long a
	// packet waited in the socket buffer and its own queues.
	Stamp int64
	// ECN is the received datagram's outer ECN codepoint (IP_RECVTOS /
	// IPV6_RECVTCLASS; ECNNotECT when the kernel did not say). A UDP_GRO
	// run shares one: the kernel coalesces only datagrams whose IP
	// headers agree.
	ECN uint8
}

// ECN codepoints (RFC 3168), the low two bits of the TOS / traffic class.
const (
	ECNNotECT = 0
	ECNECT1   = 1
	ECNECT0   = 2
	ECNCE     = 3
)

// Split calls f for every datagram in a received message.
func (m *Message) Split(f func(b []byte)) {
	b := m.Buf[:m.N]
	if m.Segment <= 0 || m.Segment >= len(b) {
		f(b)
		return
	}
	for len(b) > 0 {
		n := min(m.Segment, len(b))
		f(b[:n])
		b = b[n:]
	}
}

// socket is what Conn is on every OS: recvmmsg/sendmmsg with GRO and GSO
// on Linux (batch_linux.go), fallback/udp's one datagram per system call
// elsewhere (batch_other.go). The transport and the send queues use no
// more of it than this (and Open, and Writer's GSO and WriteBatch).
type socket interface {
	GSO() bool
	GRO() bool
	SetGSORefused(func(error))
	ReadBatch(ms []Message) (n int, drops uint64, err error)
	WriteBatch(ms []Message) (sent int, err error)
	NewWriter(batch int) *Writer
}

var _ socket = (*Conn)(nil)

// IsClosed reports whether err means the socket was closed.
func IsClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

// ErrTooLarge is returned by SendQueue.Add for a datagram over the
// queue's slot size.
var ErrTooLarge = errors.New("udp: datagram larger than the send slot")

// ErrQueueFull is returned by SendQueue.Add when pkt needs a new message
// and the queue has none left: flush first.
var ErrQueueFull = errors.New("udp: send queue full")

// SendQueue gathers datagrams for one sendmmsg, coalescing runs to one
// address into GSO messages when the socket supports it. It copies each
// datagram into preallocated slots, so the caller may reuse its buffer
// at once. One goroutine at a time.
type SendQueue struct {
	conn     *Writer
	slots    [][]byte // one per message, cap slotSize
	ms       []Message
	n        int  // messages in use
	closed   bool // the last message ended with a short datagram
	count    int  // datagrams in the last message
	slotSize int
	// Datagrams is how many datagrams are queued now.
	Datagrams int
}

// NewSendQueue makes a queue of up to batch messages for conn; mtu is the
// largest datagram it will be given.
func NewSendQueue(conn *Conn, batch, mtu int) *SendQueue {
	return NewWriterQueue(conn.defaultWriter(), batch, mtu)
}

// NewWriterQueue is NewSendQueue sending through w: one queue per
// sending goroutine, each with its own Writer.
func NewWriterQueue(conn *Writer, batch, mtu int) *SendQueue {
	slot := mtu
	if conn.GSO() {
		slot = MaxMessage
	}
	q := &SendQueue{conn: conn, slots: make([][]byte, batch), ms: make([]Message, batch), slotSize: slot}
	for i := range q.slots {
		q.slots[i] = make([]byte, 0, slot)
	}
	return q
}

// Full reports whether the next Add could need a Flush first.
func (q *SendQueue) Full() bool { return q.n == len(q.ms) }

// Len is the number of messages queued (≤ the batch size).
func (q *SendQueue) Len() int { return q.n }

// Add queues a copy of pkt for to. The caller flushes when Add reports
// the queue full (after queuing pkt) and when its burst of work ends.
func (q *SendQueue) Add(to netip.AddrPort, pkt []byte) (full bool, err error) {
	b, full, err := q.Reserve(to, len(pkt))
	if err != nil {
		return full, err
	}
	copy(b, pkt)
	return full, nil
}

// Reserve queues an n-byte datagram for to and returns its bytes in the
// queue, for the caller to fill (seal in place) before its next call on
// the queue. Full and errors are as for Add.
func (q *SendQueue) Reserve(to netip.AddrPort, n int) (b []byte, full bool, err error) {
	if n > q.slotSize || n <= 0 {
		return nil, q.Full(), ErrTooLarge
	}
	if q.n > 0 && q.conn.GSO() {
		last := &q.ms[q.n-1]
		slot := q.slots[q.n-1]
		seg := len(slot)
		if q.count > 1 {
			seg = last.Segment
		}
		if last.Addr == to && !q.closed && n <= seg && q.count < MaxSegments && len(slot)+n <= q.slotSize {
			q.slots[q.n-1] = slot[:len(slot)+n]
			last.Buf = q.slots[q.n-1]
			last.Segment = seg
			q.count++
			q.closed = n < seg
			q.Datagrams++
			return q.slots[q.n-1][len(slot):], q.Full(), nil
		}
	}
	if q.Full() {
		return nil, true, ErrQueueFull
	}
	q.slots[q.n] = q.slots[q.n][:n]
	q.ms[q.n] = Message{Buf: q.slots[q.n], Addr: to}
	q.n++
	q.count, q.closed = 1, false
	q.Datagrams++
	return q.slots[q.n-1], q.Full(), nil
}

// Flush sends everything queued and empties the queue. It returns how
// many datagrams the kernel accepted; on an error the rest are dropped
// (UDP is lossy; the caller counts them).
func (q *SendQueue) Flush() (sent int, err error) {
	if q.n == 0 {
		return 0, nil
	}
	sent, err = q.conn.WriteBatch(q.ms[:q.n])
	q.n, q.count, q.closed, q.Datagrams = 0, 0, false, 0
	return sent, err
}
