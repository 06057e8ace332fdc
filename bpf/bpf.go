package bpf

import (
	"errors"
	"fmt"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrNotSupported: no XDP on this operating system.
	ErrNotSupported = errors.New("bpf: XDP is supported on Linux only")
	// ErrLinksFull: the links map holds its maximum number of indices.
	ErrLinksFull = errors.New("bpf: links map full")
	// ErrLocalAddrsFull: SetLocalAddrs was given more addresses than
	// local_addrs holds.
	ErrLocalAddrsFull = errors.New("bpf: local_addrs map full")
	// ErrUnknownLink: RemoveLink of an index that is not in the map.
	ErrUnknownLink = errors.New("bpf: receiver index not in links map")
)

// Map capacities and limits, the same as in xdp_fips.c.
const (
	MaxPorts          = 4     // UDP ports in the config map
	DefaultMaxLinks   = 65536 // links entries unless Options.MaxLinks says less
	DefaultMaxSources = 16384 // ratelimit LRU entries unless Options.MaxSources says less
	MaxSlots          = 64    // xsks entries: worker/queue slots a link can name
	MaxLocalAddrs     = 1024  // local_addrs entries: the node's own addresses
	// MaxEthernetInterfaces is eth_ifaces' size: interfaces an Ethernet
	// transport runs on.
	MaxEthernetInterfaces = 64
	ProgramName           = "xdp_fips"
)

// Verdict is what xdp_fips did with a frame (C enum fips_verdict).
type Verdict uint32

// Verdicts, in the order of enum fips_verdict.
const (
	VerdictPass Verdict = iota
	VerdictDrop
	VerdictRedirect
	verdictMax
)

var verdictNames = [...]string{"pass", "drop", "redirect"}

// Verdicts lists every verdict.
func Verdicts() []Verdict { return []Verdict{VerdictPass, VerdictDrop, VerdictRedirect} }

func (v Verdict) String() string {
	if v < verdictMax {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint32(v))
}

// Reason says why (C enum fips_reason). Each reason has one verdict.
type Reason uint32

// Reasons, in the order of enum fips_reason.
const (
	ReasonDisabled       Reason = iota // pass: config not enabled
	ReasonNotIP                        // pass: EtherType neither IPv4 nor IPv6
	ReasonShort                        // pass: frame ends inside a header
	ReasonMalformed                    // pass: bad IP version/IHL or UDP length
	ReasonIPFragment                   // pass: IPv4 fragment
	ReasonIPv6Ext                      // pass: IPv6 extension header
	ReasonNotUDP                       // pass: another transport
	ReasonOtherPort                    // pass: UDP, not a FIPS port
	ReasonFMPShort                     // drop: payload shorter than the FMP prefix
	ReasonBadVersion                   // drop: FMP version not 0
	ReasonBadPhase                     // drop: phase not 0, 1, 2
	ReasonBadLength                    // drop: length or payload_len wrong for the phase
	ReasonBadFlags                     // drop: flags on a handshake packet
	ReasonUnknownIndex                 // drop: receiver index not in links
	ReasonLinkKernel                   // pass: known link, no XSK bound to its slot
	ReasonLinkXSK                      // redirect: known link into its XSK
	ReasonHandshake                    // pass: msg1/msg2 within the token bucket
	ReasonRateLimited                  // drop: msg1/msg2 over the token bucket
	ReasonRateLimitError               // pass: the bucket could not be stored
	ReasonMultiBuffer                  // pass: a multi-buffer frame (Options.Frags: a jumbo frame)
	ReasonNotLocal                     // pass: FIPS port, destination not a local address (SetLocalAddrs): routed traffic
	ReasonEthShort                     // drop: FIPS EtherType, frame ends in its header or before its length
	ReasonEthBadType                   // drop: FIPS EtherType, frame type neither data nor beacon
	ReasonBeacon                       // pass: beacon within its source MAC's token bucket
	ReasonBadBeacon                    // drop: beacon short or not version 1
	ReasonBeaconLimited                // drop: beacon over its source MAC's token bucket
	reasonMax
)

var reasonNames = [...]string{
	"disabled", "not_ip", "short", "malformed", "ip_fragment", "ipv6_ext",
	"not_udp", "other_port", "fmp_short", "bad_version", "bad_phase",
	"bad_length", "bad_flags", "unknown_index", "link_kernel", "link_xsk",
	"handshake", "rate_limited", "ratelimit_error", "multi_buffer",
	"not_local", "eth_short", "eth_bad_type", "beacon", "bad_beacon",
	"beacon_limited",
}

var reasonVerdicts = [...]Verdict{
	VerdictPass, VerdictPass, VerdictPass, VerdictPass, VerdictPass, VerdictPass,
	VerdictPass, VerdictPass, VerdictDrop, VerdictDrop, VerdictDrop,
	VerdictDrop, VerdictDrop, VerdictDrop, VerdictPass, VerdictRedirect,
	VerdictPass, VerdictDrop, VerdictPass, VerdictPass,
	VerdictPass, VerdictDrop, VerdictDrop, VerdictPass, VerdictDrop,
	VerdictDrop,
}

// Reasons lists every reason.
func Reasons() []Reason {
	r := make([]Reason, reasonMax)
	for i := range r {
		r[i] = Reason(i)
	}
	return r
}

func (r Reason) String() string {
	if r < reasonMax {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint32(r))
}

// Verdict is the verdict the program gives with this reason.
func (r Reason) Verdict() Verdict {
	if r < reasonMax {
		return reasonVerdicts[r]
	}
	return verdictMax
}

// Counters are packets and bytes (whole frames, Ethernet header included).
type Counters struct {
	Packets uint64
	Bytes   uint64
}

// Stats are the counters summed over CPUs. Every (verdict, reason) pair the
// program can produce is present, zero or not.
type Stats map[Verdict]map[Reason]Counters

// AttachMode is how the program is attached to an interface.
type AttachMode int

// Attach modes. AttachAuto tries native, then generic.
const (
	AttachAuto AttachMode = iota
	AttachNative
	AttachGeneric
)

func (m AttachMode) String() string {
	switch m {
	case AttachAuto:
		return "auto"
	case AttachNative:
		return "native"
	case AttachGeneric:
		return "generic"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseAttachMode reads "auto", "native" or "generic".
func ParseAttachMode(s string) (AttachMode, error) {
	for _, m := range []AttachMode{AttachAuto, AttachNative, AttachGeneric} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("bpf: attach mode %q: want auto, native or generic", s)
}

// Options for Load.
type Options struct {
	// Interfaces are attached at Load in Mode, unless NoAttach.
	Interfaces []int
	Mode       AttachMode
	// NoAttach loads program and maps without attaching them anywhere,
	// so tests can run the program on crafted frames.
	NoAttach bool
	// MaxLinks and MaxSources cap the links and ratelimit maps; 0 or more
	// than the default means the default.
	MaxLinks   uint32
	MaxSources uint32
	// Frags loads the program with BPF_F_XDP_HAS_FRAGS (xdp.frags): it
	// then also sees frames in several buffers, so it attaches natively
	// to a device whose MTU exceeds a page (veth refuses a program
	// without it above about 3.5 KB: ERANGE). Multi-buffer frames to a
	// FIPS port pass to the kernel as ReasonMultiBuffer, never to an
	// XSK: leave it false where AF_XDP sockets receive. (It does not
	// keep a veth peer's GSO: veth turns that off for any XDP program.)
	Frags bool
}

// Attachment is the program on one interface.
type Attachment struct {
	Ifindex   int
	Mode      AttachMode // native or generic, as attached
	ProgramID uint32
}

// Occupancy is how full the bounded maps are, and what they refused.
type Occupancy struct {
	Links, LinksMax     uint32
	LinksRefused        uint64 // AddLink calls refused because links was full
	Sources, SourcesMax uint32 // ratelimit buckets; the LRU evicts, never refuses
	// LocalAddrs are the addresses in local_addrs; LocalAddrsRefused
	// counts those SetLocalAddrs could not store (map full): frames to
	// them pass as ReasonNotLocal.
	LocalAddrs, LocalAddrsMax uint32
	LocalAddrsRefused         uint64
	LocalOnly                 bool // the destination check is on
}

// checkConfig validates SetConfig's arguments.
func checkConfig(ports []uint16) error {
	if len(ports) > MaxPorts {
		return fmt.Errorf("bpf: %d ports, at most %d", len(ports), MaxPorts)
	}
	for _, p := range ports {
		if p == 0 {
			return errors.New("bpf: port 0")
		}
	}
	return nil
}
