package bpf

import "fmt"

// TC program names, as the kernel shows them.
const (
	TCEgressName  = "tc_fips_egress"
	TCIngressName = "tc_fips_ingress"
)

// TCDir is which tc_fips program counted (C enum fips_tc_dir).
type TCDir uint32

// Directions, in the order of enum fips_tc_dir.
const (
	TCEgress TCDir = iota
	TCIngress
	tcDirMax
)

var tcDirNames = [...]string{"egress", "ingress"}

// TCDirs lists both directions.
func TCDirs() []TCDir { return []TCDir{TCEgress, TCIngress} }

func (d TCDir) String() string {
	if d < tcDirMax {
		return tcDirNames[d]
	}
	return fmt.Sprintf("dir(%d)", uint32(d))
}

// TCReason is what a tc_fips program saw (C enum fips_tc_reason).
type TCReason uint32

// Reasons, in the order of enum fips_tc_reason.
const (
	TCReasonDisabled  TCReason = iota // config not enabled
	TCReasonNotIP                     // EtherType neither IPv4 nor IPv6
	TCReasonShort                     // packet ends inside the IP or UDP header
	TCReasonNotUDP                    // another transport, bad IP version or IHL
	TCReasonFragment                  // IPv4 fragment or IPv6 extension header
	TCReasonOtherPort                 // UDP, not from/to a FIPS port
	TCReasonMarked                    // egress: Not-ECT marked ECT(0)
	TCReasonECNKept                   // egress: already ECT(0), ECT(1) or CE
	TCReasonNotECT                    // ingress: Not-ECT
	TCReasonECT                       // ingress: ECT(0) or ECT(1)
	TCReasonCE                        // ingress: CE
	TCReasonForwarded                 // egress: FIPS port, no local socket: forwarded, not marked
	tcReasonMax
)

var tcReasonNames = [...]string{
	"disabled", "not_ip", "short", "not_udp", "fragment", "other_port",
	"marked", "ecn_kept", "not_ect", "ect", "ce", "forwarded",
}

// TCReasons lists every reason.
func TCReasons() []TCReason {
	r := make([]TCReason, tcReasonMax)
	for i := range r {
		r[i] = TCReason(i)
	}
	return r
}

func (r TCReason) String() string {
	if r < tcReasonMax {
		return tcReasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint32(r))
}

// In reports whether the program of direction d can count r.
func (r TCReason) In(d TCDir) bool {
	switch r {
	case TCReasonMarked, TCReasonECNKept, TCReasonForwarded:
		return d == TCEgress
	case TCReasonNotECT, TCReasonECT, TCReasonCE:
		return d == TCIngress
	}
	return r < tcReasonMax && d < tcDirMax
}

// TCStats are the tc_fips counters summed over CPUs: every (direction,
// reason) pair a program can count is present.
type TCStats map[TCDir]map[TCReason]Counters

// TCAttachMode is how the tc programs are attached to an interface.
type TCAttachMode int

// TC attach modes: tcx links (Linux 6.6+), else a clsact qdisc's
// direct-action filters.
const (
	TCAttachTCX TCAttachMode = iota + 1
	TCAttachClsact
)

func (m TCAttachMode) String() string {
	switch m {
	case TCAttachTCX:
		return "tcx"
	case TCAttachClsact:
		return "clsact"
	}
	return fmt.Sprintf("tcmode(%d)", int(m))
}

// TCAttachment is the pair of tc programs on one interface.
type TCAttachment struct {
	Ifindex             int
	Mode                TCAttachMode
	EgressID, IngressID uint32
}
