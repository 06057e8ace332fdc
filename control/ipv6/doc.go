// Package ipv6 owns the packet-level pieces of the FIPS IPv6 adapter:
// pure functions over caller-supplied buffers, with no TUN device, sockets
// or goroutines.
//
// It provides:
//
//   - ICMPv6 error construction (RFC 4443): Destination Unreachable and
//     Packet Too Big, quoting as much of the invoking packet as fits in the
//     IPv6 minimum MTU of 1280 bytes, with the pseudo-header checksum.
//     ShouldSendICMPError carries the RFC 4443 §2.4(e) suppression rules the
//     builders apply (no errors about errors, nor to unspecified or
//     multicast sources).
//   - RateLimiter, the per-source limiter for Packet Too Big messages
//     (one per 100 ms per source address), with a bounded table.
//   - ClampMSS, the TCP MSS clamp applied to SYN and SYN-ACK segments, and
//     RecalculateL4Checksum, the full TCP/UDP checksum recomputation it uses.
//   - EffectiveMTU and MaxMSS, the MTU arithmetic for FIPS-encapsulated
//     IPv6 (FIPS_IPV6_OVERHEAD = 77 bytes).
//
// The outbound routing decision, the TUN reader/writer and the choice of
// path MTU per destination live elsewhere; this package only shapes bytes.
package ipv6
