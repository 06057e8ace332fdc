package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/fips-go/fips/control/identity"
)

// Link messages: the plaintext of an established FMP frame after the 4-byte
// timestamp. Every Parse function here takes the whole message starting
// with its msg_type byte and checks that byte, and every MarshalTo writes
// it. Where upstream's decoder ignores bytes after the last field
// (TreeAnnounce, LookupRequest, LookupResponse, Disconnect, Heartbeat) so
// do these, which keeps older nodes tolerant of appended fields; Len then
// reports the canonical size, which can be shorter than the input.

// MsgType is the first byte of a link message.
type MsgType uint8

// Link message types. Unknown types are logged and dropped by receivers.
const (
	MsgSessionDatagram MsgType = 0x00 // routed hop by hop; carries an FSP packet
	MsgSenderReport    MsgType = 0x01 // MMP, peer to peer
	MsgReceiverReport  MsgType = 0x02 // MMP, peer to peer
	MsgTreeAnnounce    MsgType = 0x10
	MsgFilterAnnounce  MsgType = 0x20
	MsgLookupRequest   MsgType = 0x30
	MsgLookupResponse  MsgType = 0x31
	MsgDisconnect      MsgType = 0x50
	MsgHeartbeat       MsgType = 0x51
	// MsgLinkPQ (ours, not upstream's): one fragment of a link's
	// post-quantum upgrade (link_pq.go). Upstream master drops it as an
	// unknown type and keeps the link, so it is not Known.
	MsgLinkPQ MsgType = 0xE0
)

// Known reports whether upstream master dispatches this type.
func (t MsgType) Known() bool {
	switch t {
	case MsgSessionDatagram, MsgSenderReport, MsgReceiverReport, MsgTreeAnnounce,
		MsgFilterAnnounce, MsgLookupRequest, MsgLookupResponse, MsgDisconnect, MsgHeartbeat:
		return true
	}
	return false
}

// String is upstream's name for the type, or MsgType(0xNN) when unknown.
func (t MsgType) String() string {
	switch t {
	case MsgSessionDatagram:
		return "SessionDatagram"
	case MsgSenderReport:
		return "SenderReport"
	case MsgReceiverReport:
		return "ReceiverReport"
	case MsgTreeAnnounce:
		return "TreeAnnounce"
	case MsgFilterAnnounce:
		return "FilterAnnounce"
	case MsgLookupRequest:
		return "LookupRequest"
	case MsgLookupResponse:
		return "LookupResponse"
	case MsgDisconnect:
		return "Disconnect"
	case MsgHeartbeat:
		return "Heartbeat"
	case MsgLinkPQ:
		return "LinkPQ"
	}
	return fmt.Sprintf("MsgType(0x%02x)", uint8(t))
}

// checkMsgType verifies b is non-empty, starts with want and holds at least
// min bytes in total.
func checkMsgType(b []byte, want MsgType, min int) error {
	if len(b) == 0 {
		return errTruncated(want.String(), "msg_type", 0, 1)
	}
	if MsgType(b[0]) != want {
		return errKind(ErrType, want.String(), "msg_type", fmt.Sprintf("got 0x%02x, want 0x%02x", b[0], uint8(want)))
	}
	if len(b) < min {
		return errTruncated(want.String(), "", len(b), min)
	}
	return nil
}

// ---------------------------------------------------------------------------
// SessionDatagram (0x00)

// SessionDatagramHeaderSize is the fixed part: msg_type, ttl, path_mtu, src, dest.
const SessionDatagramHeaderSize = 36

// SessionDatagram carries one FSP packet across the mesh. Transit nodes
// read src/dest, decrement TTL and lower PathMTU; the payload is opaque.
type SessionDatagram struct {
	TTL     uint8  // forwarding stops when the decremented TTL would be 0; delivery ignores it
	PathMTU uint16 // smallest link MTU seen so far; the source starts at 0xffff
	Src     identity.NodeAddr
	Dest    identity.NodeAddr
	Payload []byte // the FSP packet, to the end of the message
}

// ParseSessionDatagram decodes a SessionDatagram message.
func ParseSessionDatagram(b []byte) (SessionDatagram, error) {
	if err := checkMsgType(b, MsgSessionDatagram, SessionDatagramHeaderSize); err != nil {
		return SessionDatagram{}, err
	}
	d := SessionDatagram{
		TTL:     b[sdTTL],
		PathMTU: binary.LittleEndian.Uint16(b[sdPathMTU:]),
		Src:     SessionDatagramSrc(b),
		Dest:    SessionDatagramDest(b),
		Payload: b[SessionDatagramHeaderSize:],
	}
	return d, nil
}

// The SessionDatagram header's fields, by offset (msg_type at 0).
const (
	sdTTL     = 1
	sdPathMTU = 2
	sdSrc     = 4
	sdDest    = 20
)

// The accessors below read and write the fixed header of an encoded
// SessionDatagram in place, for the per-packet paths that do not parse
// the whole message. The caller has checked that b holds at least
// SessionDatagramHeaderSize bytes and starts with the type byte; they
// panic otherwise.

// SessionDatagramTTL is the datagram's TTL.
func SessionDatagramTTL(b []byte) uint8 { return b[sdTTL] }

// SessionDatagramPathMTU is the smallest link MTU the datagram has seen.
func SessionDatagramPathMTU(b []byte) uint16 { return binary.LittleEndian.Uint16(b[sdPathMTU:]) }

// SessionDatagramSrc is the datagram's source address.
func SessionDatagramSrc(b []byte) (a identity.NodeAddr) {
	copy(a[:], b[sdSrc:sdDest])
	return a
}

// SessionDatagramDest is the datagram's destination address.
func SessionDatagramDest(b []byte) (a identity.NodeAddr) {
	copy(a[:], b[sdDest:SessionDatagramHeaderSize])
	return a
}

// PutSessionDatagramHeader writes the fixed header, type byte included,
// in front of a payload already in place at b[SessionDatagramHeaderSize:].
func PutSessionDatagramHeader(b []byte, ttl uint8, pathMTU uint16, src, dest identity.NodeAddr) {
	b[0] = byte(MsgSessionDatagram)
	b[sdTTL] = ttl
	binary.LittleEndian.PutUint16(b[sdPathMTU:], pathMTU)
	copy(b[sdSrc:sdDest], src[:])
	copy(b[sdDest:SessionDatagramHeaderSize], dest[:])
}

// Len is the encoded size.
func (d SessionDatagram) Len() int { return SessionDatagramHeaderSize + len(d.Payload) }

// MarshalTo writes the message. Payload may already sit at b[36:], as when
// a transit node rewrites the header in place.
// SetSessionDatagramHops rewrites the TTL and path MTU of an encoded
// SessionDatagram in place (forwarding changes nothing else).
func SetSessionDatagramHops(b []byte, ttl uint8, pathMTU uint16) error {
	if len(b) < SessionDatagramHeaderSize || MsgType(b[0]) != MsgSessionDatagram {
		return errBuffer("SessionDatagram", len(b), SessionDatagramHeaderSize)
	}
	b[sdTTL] = ttl
	binary.LittleEndian.PutUint16(b[sdPathMTU:], pathMTU)
	return nil
}

func (d SessionDatagram) MarshalTo(b []byte) (int, error) {
	n := d.Len()
	if len(b) < n {
		return 0, errBuffer("SessionDatagram", len(b), n)
	}
	PutSessionDatagramHeader(b, d.TTL, d.PathMTU, d.Src, d.Dest)
	copy(b[SessionDatagramHeaderSize:n], d.Payload)
	return n, nil
}

// ---------------------------------------------------------------------------
// TreeAnnounce (0x10)

// TreeAnnounce sizes.
const (
	TreeAnnounceVersion       = 0x01
	TreeAnnounceMinSize       = 1 + 1 + 8 + 8 + identity.NodeAddrSize + 2 + TreeAnnounceSignatureSize // 100, without entries
	TreeAnnounceEntrySize     = identity.NodeAddrSize + 8 + 8                                         // 32
	TreeAnnounceSignatureSize = 64
	// DeclarationSigningSize is the length of the bytes a TreeAnnounce
	// signature covers: node_addr, parent, sequence, timestamp.
	DeclarationSigningSize = 2*identity.NodeAddrSize + 8 + 8
)

// AncestryEntry is one hop of a TreeAnnounce ancestry.
type AncestryEntry struct {
	NodeAddr  identity.NodeAddr
	Sequence  uint64 // that node's declaration sequence
	Timestamp uint64 // that node's declaration time, Unix seconds
}

// Ancestry is a view over packed TreeAnnounce entries, ordered from the
// declaring node to the root. Its length is a multiple of 32.
type Ancestry []byte

// Len is the number of entries.
func (a Ancestry) Len() int { return len(a) / TreeAnnounceEntrySize }

// At returns entry i (0 = the declaring node, Len()-1 = the root).
func (a Ancestry) At(i int) AncestryEntry {
	e := a[i*TreeAnnounceEntrySize : (i+1)*TreeAnnounceEntrySize]
	var out AncestryEntry
	copy(out.NodeAddr[:], e)
	out.Sequence = binary.LittleEndian.Uint64(e[16:])
	out.Timestamp = binary.LittleEndian.Uint64(e[24:])
	return out
}

// addrAt returns the node address of entry i without decoding the rest.
func (a Ancestry) addrAt(i int) (n identity.NodeAddr) {
	copy(n[:], a[i*TreeAnnounceEntrySize:])
	return n
}

// AncestryOf packs entries into a new Ancestry (allocates; for encoding).
func AncestryOf(entries ...AncestryEntry) Ancestry {
	a := make(Ancestry, len(entries)*TreeAnnounceEntrySize)
	for i, e := range entries {
		p := a[i*TreeAnnounceEntrySize:]
		copy(p, e.NodeAddr[:])
		binary.LittleEndian.PutUint64(p[16:], e.Sequence)
		binary.LittleEndian.PutUint64(p[24:], e.Timestamp)
	}
	return a
}

// TreeAnnounce is a node's signed parent declaration plus its path to the
// root. The declaring node is not a field of its own: it is entry 0 of the
// ancestry.
type TreeAnnounce struct {
	Sequence  uint64 // declaration sequence
	Timestamp uint64 // declaration time, Unix seconds
	Parent    identity.NodeAddr
	Ancestry  Ancestry
	// Signature is a BIP-340 signature by the declaring node over
	// SHA-256 of SigningBytes, not over the message.
	Signature []byte
}

// ParseTreeAnnounce decodes a TreeAnnounce with upstream's structural
// checks: version 1, entries and signature present, at least one entry.
// The ancestry rules that need the signature checked first are in
// Validate.
func ParseTreeAnnounce(b []byte) (TreeAnnounce, error) {
	const msg = "TreeAnnounce"
	if err := checkMsgType(b, MsgTreeAnnounce, TreeAnnounceMinSize); err != nil {
		return TreeAnnounce{}, err
	}
	if b[1] != TreeAnnounceVersion {
		return TreeAnnounce{}, errKind(ErrVersion, msg, "version", fmt.Sprintf("got %d, want %d", b[1], TreeAnnounceVersion))
	}
	t := TreeAnnounce{
		Sequence:  binary.LittleEndian.Uint64(b[2:]),
		Timestamp: binary.LittleEndian.Uint64(b[10:]),
	}
	copy(t.Parent[:], b[18:34])
	count := int(binary.LittleEndian.Uint16(b[34:]))
	end := 36 + count*TreeAnnounceEntrySize
	if need := end + TreeAnnounceSignatureSize; len(b) < need {
		return TreeAnnounce{}, errTruncated(msg, "ancestry", len(b), need)
	}
	// Upstream reads the whole message before refusing an empty ancestry,
	// so a short message with count 0 is reported as truncated, not empty.
	if count == 0 {
		return TreeAnnounce{}, errValue(msg, "ancestry_count", "must be at least 1, got 0")
	}
	t.Ancestry = Ancestry(b[36:end:end])
	t.Signature = b[end : end+TreeAnnounceSignatureSize : end+TreeAnnounceSignatureSize]
	return t, nil
}

// Node is the declaring node (ancestry entry 0).
func (t TreeAnnounce) Node() identity.NodeAddr { return t.Ancestry.addrAt(0) }

// Root is the advertised root (the last ancestry entry), or the zero
// address for an ancestry no parsed message can have: an empty one.
func (t TreeAnnounce) Root() identity.NodeAddr {
	if t.Ancestry.Len() == 0 {
		return identity.NodeAddr{}
	}
	return t.Ancestry.addrAt(t.Ancestry.Len() - 1)
}

// IsRoot reports whether the node declares itself root (parent == self).
func (t TreeAnnounce) IsRoot() bool { return t.Parent == t.Node() }

// Validate applies upstream's ancestry rules, which receivers check after
// the signature: a root declares exactly one entry; otherwise entry 1 is
// the declared parent; the advertised root is the smallest address on the
// path. (Upstream also compares entry 0 with the declaring node, which
// holds by construction here.) It needs a parsed or well-formed value.
func (t TreeAnnounce) Validate() error {
	const msg = "TreeAnnounce"
	n := t.Ancestry.Len()
	if n == 0 {
		return errValue(msg, "ancestry", "empty")
	}
	if t.IsRoot() {
		if n != 1 {
			return errValue(msg, "ancestry", fmt.Sprintf("root declaration carries %d entries, want 1", n))
		}
	} else {
		if n < 2 {
			return errValue(msg, "ancestry", "non-root declaration has no parent entry")
		}
		if p := t.Ancestry.addrAt(1); p != t.Parent {
			return errValue(msg, "ancestry", "entry 1 is "+p.String()+", declared parent is "+t.Parent.String())
		}
	}
	root := t.Root()
	for i := 0; i < n; i++ {
		if a := t.Ancestry.addrAt(i); a.Less(root) {
			return errValue(msg, "ancestry", "advertised root "+root.String()+" is not the minimum, "+a.String()+" is smaller")
		}
	}
	return nil
}

// SigningBytes appends the 48-byte declaration the signature covers to dst.
func (t TreeAnnounce) SigningBytes(dst []byte) []byte {
	return AppendDeclaration(dst, t.Node(), t.Parent, t.Sequence, t.Timestamp)
}

// AppendDeclaration appends node_addr ‖ parent ‖ sequence ‖ timestamp to
// dst: what a node signs (as SHA-256 of it) before it has an ancestry.
func AppendDeclaration(dst []byte, node, parent identity.NodeAddr, sequence, timestamp uint64) []byte {
	dst = append(dst, node[:]...)
	dst = append(dst, parent[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, sequence)
	return binary.LittleEndian.AppendUint64(dst, timestamp)
}

// Len is the encoded size: 100 + 32 per entry.
func (t TreeAnnounce) Len() int { return TreeAnnounceMinSize + len(t.Ancestry) }

// MarshalTo writes the message.
func (t TreeAnnounce) MarshalTo(b []byte) (int, error) {
	const msg = "TreeAnnounce"
	n := t.Len()
	switch {
	case len(t.Signature) != TreeAnnounceSignatureSize:
		return 0, errLength(msg, "signature", len(t.Signature), TreeAnnounceSignatureSize)
	case len(t.Ancestry)%TreeAnnounceEntrySize != 0:
		return 0, errValue(msg, "ancestry", "length "+strconv.Itoa(len(t.Ancestry))+" is not a multiple of 32")
	case t.Ancestry.Len() == 0 || t.Ancestry.Len() > 0xffff:
		return 0, errValue(msg, "ancestry", strconv.Itoa(t.Ancestry.Len())+" entries, want 1..65535")
	case len(b) < n:
		return 0, errBuffer(msg, len(b), n)
	}
	b[0] = byte(MsgTreeAnnounce)
	b[1] = TreeAnnounceVersion
	binary.LittleEndian.PutUint64(b[2:], t.Sequence)
	binary.LittleEndian.PutUint64(b[10:], t.Timestamp)
	copy(b[18:34], t.Parent[:])
	binary.LittleEndian.PutUint16(b[34:], uint16(t.Ancestry.Len()))
	end := 36 + copy(b[36:], t.Ancestry)
	copy(b[end:n], t.Signature)
	return n, nil
}

// ---------------------------------------------------------------------------
// FilterAnnounce (0x20)

// FilterAnnounce sizes and the v1 parameters.
const (
	FilterAnnounceHeaderSize = 11 // msg_type, sequence, hash_count, size_class
	FilterSizeClassV1        = 1  // the only size class master accepts
	FilterMaxSizeClass       = 3  // the range upstream recognises before insisting on v1
	FilterAnnounceSize       = FilterAnnounceHeaderSize + BloomFilterBytes
)

// FilterAnnounce advertises the destinations reachable through the sender.
type FilterAnnounce struct {
	Sequence  uint64 // must increase; receivers drop stale or replayed filters
	HashCount uint8  // 5 in v1; 0 is rejected
	SizeClass uint8  // filter is 512<<SizeClass bytes; only 1 is accepted
	Filter    []byte // the bloom filter bits
}

// ParseFilterAnnounce decodes a FilterAnnounce. Upstream's rule is
// size_class <= 3 and then == 1, and the filter must fill the rest of the
// message exactly.
func ParseFilterAnnounce(b []byte) (FilterAnnounce, error) {
	const msg = "FilterAnnounce"
	if err := checkMsgType(b, MsgFilterAnnounce, FilterAnnounceHeaderSize); err != nil {
		return FilterAnnounce{}, err
	}
	f := FilterAnnounce{
		Sequence:  binary.LittleEndian.Uint64(b[1:]),
		HashCount: b[9],
		SizeClass: b[10],
	}
	if f.SizeClass > FilterMaxSizeClass {
		return FilterAnnounce{}, errValue(msg, "size_class", fmt.Sprintf("got %d, max %d", f.SizeClass, FilterMaxSizeClass))
	}
	if f.SizeClass != FilterSizeClassV1 {
		return FilterAnnounce{}, errValue(msg, "size_class", fmt.Sprintf("got %d, v1 requires %d", f.SizeClass, FilterSizeClassV1))
	}
	want := FilterAnnounceHeaderSize + 512<<f.SizeClass
	if len(b) < want {
		return FilterAnnounce{}, errTruncated(msg, "filter", len(b), want)
	}
	if len(b) > want {
		return FilterAnnounce{}, errLength(msg, "message length", len(b), want)
	}
	if f.HashCount == 0 {
		return FilterAnnounce{}, errValue(msg, "hash_count", "must be at least 1, got 0")
	}
	f.Filter = b[FilterAnnounceHeaderSize:]
	return f, nil
}

// Len is the encoded size.
func (f FilterAnnounce) Len() int { return FilterAnnounceHeaderSize + len(f.Filter) }

// MarshalTo writes the message. Like upstream's encoder it refuses a
// filter whose length disagrees with SizeClass; it does not insist on v1,
// so tests can build what a future peer might send.
func (f FilterAnnounce) MarshalTo(b []byte) (int, error) {
	const msg = "FilterAnnounce"
	if f.SizeClass > FilterMaxSizeClass || len(f.Filter) != 512<<f.SizeClass {
		return 0, errValue(msg, "filter", fmt.Sprintf("%d bytes does not match size_class %d", len(f.Filter), f.SizeClass))
	}
	n := f.Len()
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	b[0] = byte(MsgFilterAnnounce)
	binary.LittleEndian.PutUint64(b[1:], f.Sequence)
	b[9] = f.HashCount
	b[10] = f.SizeClass
	copy(b[FilterAnnounceHeaderSize:n], f.Filter)
	return n, nil
}

// ---------------------------------------------------------------------------
// LookupRequest (0x30) and LookupResponse (0x31)

// Lookup sizes, without coordinates.
const (
	LookupRequestMinSize  = 46 // msg_type, request_id, target, origin, ttl, min_mtu, count
	LookupResponseMinSize = 93 // msg_type, request_id, target, path_mtu, count, proof
	LookupProofSize       = 64
)

// LookupRequest asks the mesh for a node's coordinates. It travels along
// tree peers whose bloom filter contains the target.
type LookupRequest struct {
	RequestID    uint64 // random; transit nodes deduplicate on it
	Target       identity.NodeAddr
	Origin       identity.NodeAddr
	TTL          uint8  // not forwarded at 0, decremented otherwise
	MinMTU       uint16 // smallest path MTU the origin can use; 0 = no requirement
	OriginCoords Coords // origin → root, at least one entry; the response's return path
}

// ParseLookupRequest decodes a LookupRequest.
func ParseLookupRequest(b []byte) (LookupRequest, error) {
	// Upstream first requires the fixed fields and the coordinate count.
	if err := checkMsgType(b, MsgLookupRequest, LookupRequestMinSize); err != nil {
		return LookupRequest{}, err
	}
	r := LookupRequest{
		RequestID: binary.LittleEndian.Uint64(b[1:]),
		TTL:       b[41],
		MinMTU:    binary.LittleEndian.Uint16(b[42:]),
	}
	copy(r.Target[:], b[9:25])
	copy(r.Origin[:], b[25:41])
	c, _, err := parseCoords(b[44:], "LookupRequest", "origin_coords", 1)
	if err != nil {
		return LookupRequest{}, err
	}
	r.OriginCoords = c
	return r, nil
}

// Len is the encoded size: 46 + 16 per coordinate.
func (r LookupRequest) Len() int { return LookupRequestMinSize - 2 + r.OriginCoords.wireLen() }

// MarshalTo writes the message.
func (r LookupRequest) MarshalTo(b []byte) (int, error) {
	const msg = "LookupRequest"
	if err := checkCoordsForEncode(r.OriginCoords, msg, "origin_coords"); err != nil {
		return 0, err
	}
	n := r.Len()
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	b[0] = byte(MsgLookupRequest)
	binary.LittleEndian.PutUint64(b[1:], r.RequestID)
	copy(b[9:25], r.Target[:])
	copy(b[25:41], r.Origin[:])
	b[41] = r.TTL
	binary.LittleEndian.PutUint16(b[42:], r.MinMTU)
	r.OriginCoords.put(b[44:])
	return n, nil
}

// checkCoordsForEncode rejects coordinates upstream could never have
// produced: empty (decoders require one entry), ragged, or too many for the
// u16 count.
func checkCoordsForEncode(c Coords, msg, field string) error {
	switch {
	case len(c)%identity.NodeAddrSize != 0:
		return errValue(msg, field, "length "+strconv.Itoa(len(c))+" is not a multiple of 16")
	case c.Len() == 0 || c.Len() > 0xffff:
		return errValue(msg, field, strconv.Itoa(c.Len())+" entries, want 1..65535")
	}
	return nil
}

// LookupResponse returns the target's coordinates along the reverse path.
type LookupResponse struct {
	RequestID    uint64
	Target       identity.NodeAddr
	PathMTU      uint16 // target starts at 0xffff; each hop lowers it; not signed
	TargetCoords Coords // target → root, at least one entry
	// Proof is a BIP-340 signature by the target over SHA-256 of
	// ProofBytes.
	Proof []byte
}

// ParseLookupResponse decodes a LookupResponse.
func ParseLookupResponse(b []byte) (LookupResponse, error) {
	const msg = "LookupResponse"
	// Upstream requires room for fixed fields, count and proof before it
	// looks at the coordinates.
	if err := checkMsgType(b, MsgLookupResponse, LookupResponseMinSize); err != nil {
		return LookupResponse{}, err
	}
	r := LookupResponse{
		RequestID: binary.LittleEndian.Uint64(b[1:]),
		PathMTU:   binary.LittleEndian.Uint16(b[25:]),
	}
	copy(r.Target[:], b[9:25])
	c, used, err := parseCoords(b[27:], msg, "target_coords", 1)
	if err != nil {
		return LookupResponse{}, err
	}
	r.TargetCoords = c
	p := 27 + used
	if need := p + LookupProofSize; len(b) < need {
		return LookupResponse{}, errTruncated(msg, "proof", len(b), need)
	}
	r.Proof = b[p : p+LookupProofSize : p+LookupProofSize]
	return r, nil
}

// ProofBytes appends request_id ‖ target ‖ u16 count ‖ coords to dst: what
// the proof signs. The count is included and path_mtu is not.
func (r LookupResponse) ProofBytes(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, r.RequestID)
	dst = append(dst, r.Target[:]...)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(r.TargetCoords.Len()))
	return append(dst, r.TargetCoords...)
}

// Len is the encoded size: 93 + 16 per coordinate.
func (r LookupResponse) Len() int {
	return LookupResponseMinSize - 2 + r.TargetCoords.wireLen()
}

// MarshalTo writes the message.
func (r LookupResponse) MarshalTo(b []byte) (int, error) {
	const msg = "LookupResponse"
	if err := checkCoordsForEncode(r.TargetCoords, msg, "target_coords"); err != nil {
		return 0, err
	}
	if len(r.Proof) != LookupProofSize {
		return 0, errLength(msg, "proof", len(r.Proof), LookupProofSize)
	}
	n := r.Len()
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	b[0] = byte(MsgLookupResponse)
	binary.LittleEndian.PutUint64(b[1:], r.RequestID)
	copy(b[9:25], r.Target[:])
	binary.LittleEndian.PutUint16(b[25:], r.PathMTU)
	p := 27 + r.TargetCoords.put(b[27:])
	copy(b[p:n], r.Proof)
	return n, nil
}

// ---------------------------------------------------------------------------
// Disconnect (0x50) and Heartbeat (0x51)

// DisconnectReason says why a peer is closing the link.
type DisconnectReason uint8

// Disconnect reasons. Unknown codes decode as DisconnectOther.
const (
	DisconnectShutdown            DisconnectReason = 0x00 // operator requested
	DisconnectRestart             DisconnectReason = 0x01 // may reconnect soon
	DisconnectProtocolError       DisconnectReason = 0x02
	DisconnectTransportFailure    DisconnectReason = 0x03
	DisconnectResourceExhaustion  DisconnectReason = 0x04
	DisconnectSecurityViolation   DisconnectReason = 0x05
	DisconnectConfigurationChange DisconnectReason = 0x06 // peer removed from config
	DisconnectTimeout             DisconnectReason = 0x07
	DisconnectOther               DisconnectReason = 0xff
)

// Known reports whether r is one of upstream's reason codes.
func (r DisconnectReason) Known() bool {
	return r <= DisconnectTimeout || r == DisconnectOther
}

// String is upstream's display name; unknown codes print as Other, the
// reason they decode to.
func (r DisconnectReason) String() string {
	switch r {
	case DisconnectShutdown:
		return "Shutdown"
	case DisconnectRestart:
		return "Restart"
	case DisconnectProtocolError:
		return "ProtocolError"
	case DisconnectTransportFailure:
		return "TransportFailure"
	case DisconnectResourceExhaustion:
		return "ResourceExhaustion"
	case DisconnectSecurityViolation:
		return "SecurityViolation"
	case DisconnectConfigurationChange:
		return "ConfigurationChange"
	case DisconnectTimeout:
		return "Timeout"
	}
	return "Other"
}

// DisconnectSize is the size of a Disconnect message.
const DisconnectSize = 2

// Disconnect tells the peer to drop the link now rather than wait for the
// dead timeout.
type Disconnect struct {
	Reason DisconnectReason
}

// ParseDisconnect decodes a Disconnect. An unknown reason code becomes
// DisconnectOther, as upstream does, so the message is never refused for it.
func ParseDisconnect(b []byte) (Disconnect, error) {
	if err := checkMsgType(b, MsgDisconnect, DisconnectSize); err != nil {
		return Disconnect{}, err
	}
	r := DisconnectReason(b[1])
	if !r.Known() {
		r = DisconnectOther
	}
	return Disconnect{Reason: r}, nil
}

// Len is always DisconnectSize.
func (d Disconnect) Len() int { return DisconnectSize }

// MarshalTo writes the message.
func (d Disconnect) MarshalTo(b []byte) (int, error) {
	if len(b) < DisconnectSize {
		return 0, errBuffer("Disconnect", len(b), DisconnectSize)
	}
	b[0] = byte(MsgDisconnect)
	b[1] = byte(d.Reason)
	return DisconnectSize, nil
}

// HeartbeatSize is the size of a Heartbeat message: the msg_type alone.
const HeartbeatSize = 1

// Heartbeat keeps an idle link alive; receipt of any authenticated frame
// already refreshes liveness, so it has no body.
type Heartbeat struct{}

// ParseHeartbeat checks the msg_type. Upstream ignores any body.
func ParseHeartbeat(b []byte) (Heartbeat, error) {
	return Heartbeat{}, checkMsgType(b, MsgHeartbeat, HeartbeatSize)
}

// Len is always HeartbeatSize.
func (Heartbeat) Len() int { return HeartbeatSize }

// MarshalTo writes the message.
func (Heartbeat) MarshalTo(b []byte) (int, error) {
	if len(b) < HeartbeatSize {
		return 0, errBuffer("Heartbeat", len(b), HeartbeatSize)
	}
	b[0] = byte(MsgHeartbeat)
	return HeartbeatSize, nil
}
