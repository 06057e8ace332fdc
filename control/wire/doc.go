// Package wire encodes and decodes every FIPS message of upstream FIPS
// master (wire format v0.2.x): the FMP link layer (common prefix, Noise IK
// handshake packets, established frames and the link messages carried in
// them) and the FSP session layer (prefix, encrypted header with cleartext
// coordinates, XK handshake messages, session messages, plaintext error
// signals, the port-256 IPv6 shim), plus transport framing (TCP streams,
// Ethernet frames, NAT punch recognition).
//
// Conventions, the same in every file:
//   - Parse functions take the bytes of one message and return a value whose
//     variable-length parts are views into the input (no copies, no
//     allocation). The caller must not modify the input while a view is in
//     use.
//   - Every message type has Len() (encoded size) and MarshalTo(b) which
//     writes into a caller-supplied buffer and returns the number of bytes
//     written, or ErrBufferTooSmall.
//   - Bad input returns a *DecodeError naming the message and what is wrong;
//     errors.Is(err, ErrTruncated) and friends classify it.
//   - All multi-byte integers are little-endian unless a comment says
//     otherwise.
//
// The package does no cryptography and no I/O.
package wire
