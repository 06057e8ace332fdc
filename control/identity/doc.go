// Package identity owns a FIPS node's identity: the secp256k1 key pair that
// is the node's Nostr identity, its NIP-19 npub/nsec encodings, the NodeAddr
// routing address and fd00::/8 IPv6 address derived from the public key,
// BIP-340 signatures as upstream FIPS makes them, and the fips.key/fips.pub
// files on disk.
//
// It must not know about the wire format or any network I/O.
package identity
