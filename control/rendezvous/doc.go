// Package rendezvous is Nostr-mediated peer discovery and UDP NAT
// traversal: the node's overlay advert (kind 37195) and inbox relay list
// (kind 10050) on public relays, traversal offers and answers in NIP-59
// gift wraps (kind 21059, NIP-44 v2), STUN for the reflexive address, and
// the hole punch whose socket the node adopts as a UDP transport.
//
// It owns relay connections, the advert cache, the replay cache, the
// admission semaphores and the per-npub failure state. It never touches
// the node's links or routing: a punched path leaves as an Established
// value (socket, remote address, npub) and the node runs the ordinary link
// handshake over it. Everything is signed with the node's own identity key
// (no separate Nostr key), as upstream.
package rendezvous
