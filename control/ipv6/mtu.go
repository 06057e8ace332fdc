package ipv6

// Overhead is FIPS_IPV6_OVERHEAD: the bytes FIPS adds on the wire to an
// IPv6 packet carried over the compressed IPv6 shim (port 256):
// 106 base encapsulation + 4 port header + 1 format + 6 residual − 40
// stripped IPv6 header.
const Overhead = 77

// MinMTU is the IPv6 minimum link MTU (RFC 8200), the ceiling on the size
// of every ICMPv6 error this package builds.
const MinMTU = 1280

const (
	ipv6HeaderLen = 40
	tcpHeaderMin  = 20
)

// EffectiveMTU returns the largest IPv6 packet (header included) that a
// transport path of transportMTU bytes carries through the mesh:
// transportMTU − 77, saturating at zero.
func EffectiveMTU(transportMTU int) int {
	if transportMTU <= Overhead {
		return 0
	}
	return transportMTU - Overhead
}

// MaxMSS returns the TCP MSS ceiling for a transport path of transportMTU
// bytes: EffectiveMTU less the 40-byte IPv6 header and the 20-byte TCP
// header, saturating at zero and at 65535. Zero means no TCP payload fits,
// and ClampMSS treats a zero ceiling as "do not clamp".
func MaxMSS(transportMTU int) uint16 {
	m := EffectiveMTU(transportMTU) - ipv6HeaderLen - tcpHeaderMin
	if m <= 0 {
		return 0
	}
	if m > 0xffff {
		return 0xffff
	}
	return uint16(m)
}
