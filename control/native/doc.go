// Package native is the native datagram API (node.native_api): FIPS-aware
// programs send and receive datagrams addressed by public key and FSP port
// (npub:port), with no TUN device and no IPv6 emulation.
//
// The local protocol is upstream's, byte for byte, so upstream's client
// library works against a fips-go node. A client opens one AF_UNIX
// SOCK_STREAM connection to the API socket and writes one JSON command per
// line ({"command": ..., "params": {...}}); each line is answered by one
// reply line ({"status": "ok", "data": {...}} or {"status": "error",
// "data": {"errno": "E..."}, "message": "..."}). The two setup commands,
// connect and listen, pass a descriptor with their reply over SCM_RIGHTS:
// one end of a socket pair (SOCK_SEQPACKET on Linux, SOCK_DGRAM on macOS
// and FreeBSD) whose other end the node keeps. A flow's descriptor carries
// the payloads themselves, one datagram per message with no framing; a
// listener's descriptor carries one JSON arrival message per arriving
// flow, with that flow's descriptor attached.
//
// On the mesh a native datagram is an FSP DataPacket (session message type
// 0x10) whose plaintext starts with the 4-byte port header
// [src_port LE][dst_port LE], exactly as the IPv6 shim's port 256 is
// carried: the native API owns every port the shim does not.
//
// The package splits as upstream's src/native does: protocol.go parses
// commands (no I/O), registry.go decides which port, flow or listener a
// datagram belongs to (no I/O; owned by the node's event loop), and
// server_unix.go serves the socket. The client subpackage is a Go client
// for applications.
package native
