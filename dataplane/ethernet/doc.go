// Package ethernet is the Ethernet transport: FIPS directly on the link
// layer, as upstream ships it. One AF_PACKET SOCK_DGRAM socket, bound to
// one interface and one EtherType (0x2121 by default), serves every
// neighbour on that link; the kernel adds and strips the Ethernet header,
// so the payload is the FIPS frame: a type byte, then for data a u16 LE
// length and one FMP packet (the length trims the padding a NIC adds to
// short frames), or for a beacon a version byte and the sender's x-only
// key (control/wire's EthernetData and EthernetBeacon). Addresses are
// MACs (transport.Addr.MAC), rendered aa:bb:cc:dd:ee:ff as upstream does.
//
// Like the UDP transport, its reader goroutine is a dataplane worker:
// frames are read in batches (recvmmsg) into buffers of MTU+3+100 bytes
// and each data frame's packet is offered to the worker, or a pooled copy
// goes to the node; NewSender gives each worker a send queue of its own
// (sendmmsg). Beacons go to the broadcast address every
// beacon_interval_secs when announce is on — master's with the key,
// upstream next's 5-byte keyless ones, or both (Options.Beacons); when
// listen is on, received ones fill a bounded neighbour buffer the node
// drains (Discover) and, with auto_connect, dials (a keyless one, with
// Options.Next, by its MAC alone). Frames too short, truncated, of an unknown
// type or with a bad length or key are counted as DroppedInvalid; frames
// the kernel dropped for a full receive buffer (PACKET_STATISTICS) as
// KernelDrops.
//
// When the interface goes down the reader waits for it to come back; one
// deleted and created again under its name (a new index) gets a new
// socket, which the senders and the beacon sender move to.
//
// Linux only; elsewhere New works (the configuration is valid on every
// OS, as upstream's) but Start fails with a clear error.
package ethernet
