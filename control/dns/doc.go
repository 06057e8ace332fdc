// Package dns is the `.fips` DNS responder and the hosts file behind it.
//
// A query for <label>.fips (any case, trailing dot optional) is resolved by
// looking the label up in the hosts file, then among the configured peer
// aliases, then by decoding it as an npub. A resolvable name gets one
// authoritative AAAA record (the node's FIPS address) for AAAA queries and
// an empty NOERROR answer for any other type; everything else is NXDOMAIN.
// Every AAAA answer primes the node's identity cache so that the first
// packet to the address can be routed.
package dns
