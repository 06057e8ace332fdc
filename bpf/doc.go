// Package bpf loads and drives xdp_fips, the XDP program that gives FIPS
// traffic its first verdict in the kernel, before any socket read.
//
// The program (xdp_fips.c, compiled by bpf2go into the committed
// xdp_bpfel.o and xdp_bpfel.go, so building fips-go never needs clang)
// parses Ethernet → IPv4 (any IHL) or IPv6 (no extension headers) → UDP to
// one of up to MaxPorts configured ports → the FMP prefix, and then:
//
//   - not FIPS (another EtherType, protocol or port, a truncated or
//     malformed header, an IPv4 fragment, an IPv6 extension header): pass;
//   - established frame whose receiver index is in the links map: redirect
//     to the AF_XDP socket in the xsks slot of that link when one is bound,
//     else pass to the kernel UDP socket;
//   - established frame with an unknown index, a payload shorter than the
//     FMP prefix, a bad version, an unknown phase, a length or payload_len
//     wrong for the phase, or a handshake packet with flags: drop;
//   - handshake (msg1, msg2): a token bucket per source address in an LRU
//     map; over the limit drop, else pass to the socket the control plane
//     reads.
//
// Every outcome is counted per CPU by Verdict and Reason, in packets and
// bytes; Stats sums over CPUs.
//
// No AEAD runs in eBPF: this kernel offers BPF programs no ChaCha20-Poly1305
// (no helper and no kfunc), so the program judges only the cleartext FMP
// header and every frame it passes or redirects is still authenticated in
// userspace. Whatever it lets through is therefore at most what userspace
// would have had to look at anyway.
//
// The package works on Linux only; elsewhere Load returns ErrNotSupported.
// `make generate` (clang, llvm-strip) regenerates the objects and
// sources.sha256, which TestObjectsFresh checks without clang.
package bpf
