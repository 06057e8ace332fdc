package xdp

import (
	"encoding/binary"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane/afxdp"
)

// AF_XDP transmission for an Ethernet transport: a worker seals what it
// sends to a neighbour straight into a TX frame of its queue on the
// transport's interface, behind the Ethernet header and the FIPS data
// header (type 0, u16 LE length), padded to the Ethernet minimum. No
// route or neighbour lookup: the destination is a MAC already. What it
// cannot send that way — a packet over the transport's MTU, no free TX
// frame — goes through the transport's own packet-socket sender.

// ethHeaderLen is the Ethernet header and the FIPS data header.
const ethHeaderLen = 14 + wire.EthernetDataHeaderSize

// ethMinFrame is the shortest Ethernet frame without its FCS: shorter
// ones are padded with zeros (the length field tells the receiver).
const ethMinFrame = 60

type ethSender struct {
	fallback transport.Sender
	q        *afxdp.TxQueue
	src      transport.MAC
	etype    [2]byte
	mtu      int
	counts   *xskTxCounts

	// The frame being filled: submitted at the next Reserve or Flush,
	// once the caller wrote its payload.
	cur struct {
		ok   bool
		addr uint64
		buf  []byte
		n    int
	}
}

func newEthSender(e ethIface, q *afxdp.TxQueue, fallback transport.Sender, c *xskTxCounts) *ethSender {
	s := &ethSender{fallback: fallback, q: q, src: e.mac, mtu: e.mtu, counts: c}
	binary.BigEndian.PutUint16(s.etype[:], e.etherType)
	return s
}

// Reserve implements transport.Sender.
func (s *ethSender) Reserve(to transport.Addr, n int) ([]byte, error) {
	s.finish()
	if n > s.mtu || n > 0xffff {
		s.counts.tooBig.Add(1)
		return s.fallback.Reserve(to, n)
	}
	addr, buf, ok := s.q.Frame()
	if !ok || max(ethHeaderLen+n+1, ethMinFrame) > len(buf) {
		if ok {
			s.q.Unused(addr)
		}
		s.counts.noFrame.Add(1)
		return s.fallback.Reserve(to, n)
	}
	copy(buf[0:6], to.MAC[:])
	copy(buf[6:12], s.src[:])
	buf[12], buf[13] = s.etype[0], s.etype[1]
	buf[14] = wire.EthernetFrameData
	binary.LittleEndian.PutUint16(buf[15:], uint16(n))
	s.cur.ok, s.cur.addr, s.cur.buf, s.cur.n = true, addr, buf, n
	return buf[ethHeaderLen : ethHeaderLen+n], nil
}

// finish submits the frame being filled, padded to the minimum.
func (s *ethSender) finish() {
	if !s.cur.ok {
		return
	}
	s.cur.ok = false
	n := ethHeaderLen + s.cur.n
	if b := s.cur.buf; s.cur.n > 0 && b[ethHeaderLen]>>4 == wire.FMPVersionNext {
		// A version-1 packet (a link in upstream next's format) goes
		// behind next's 4-byte header: one byte further on.
		copy(b[ethHeaderLen+1:n+1], b[ethHeaderLen:n])
		b[15] = 0
		binary.LittleEndian.PutUint16(b[16:], uint16(s.cur.n))
		n++
	}
	if n < ethMinFrame {
		clear(s.cur.buf[n:ethMinFrame])
		n = ethMinFrame
	}
	s.q.Submit(s.cur.addr, n)
	s.counts.frames.Add(1)
}

// Flush implements transport.Sender: the batch goes out on the TX ring,
// and whatever went to the fallback through the packet socket.
func (s *ethSender) Flush() {
	s.finish()
	s.q.Flush()
	s.fallback.Flush()
}

// Close implements transport.Sender.
func (s *ethSender) Close() {
	s.Flush()
	s.fallback.Close()
}
