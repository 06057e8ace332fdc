package rendezvous

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// AdvertCacheGrace bounds a cached advert that has an expiration tag to
// this many advert TTLs after its created_at, whatever the tag says (one
// without the tag gets one TTL, see AdvertMaxAgeMs).
const AdvertCacheGrace = 2

// NeverPunchable reports the addresses no punch can reach (upstream's
// is_never_punchable_ip): loopback, link-local, unspecified, multicast,
// broadcast and CGNAT for IPv4; loopback, unspecified, multicast and
// fe80::/10 for IPv6. Private and documentation addresses are allowed.
func NeverPunchable(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is4() {
		b := ip.As4()
		return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() ||
			b == [4]byte{255, 255, 255, 255} || (b[0] == 100 && b[1]&0xc0 == 64)
	}
	return ip.IsLoopback() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsLinkLocalUnicast()
}

func isDocIPv4(ip netip.Addr) bool {
	if !ip.Is4() {
		return false
	}
	b := ip.As4()
	return (b[0] == 192 && b[1] == 0 && b[2] == 2) || (b[0] == 198 && b[1] == 51 && b[2] == 100) ||
		(b[0] == 203 && b[1] == 0 && b[2] == 113)
}

// unroutableDirect is an address an advert must not name for a direct
// dial: never punchable, private (RFC 1918, ULA) or IPv4 documentation.
func unroutableDirect(ip netip.Addr) bool {
	return NeverPunchable(ip) || ip.IsPrivate() || isDocIPv4(ip)
}

// PubliclyUsable is upstream's endpoint filter, applied when publishing
// and when parsing: udp "nat" and any tor endpoint pass; udp/tcp need a
// host:port with a nonzero port whose host is not localhost nor an
// unroutable IP (a non-IP host name passes).
func PubliclyUsable(e Endpoint) bool {
	addr := strings.TrimSpace(e.Addr)
	if addr == "" {
		return false
	}
	if equalFoldASCII(addr, "nat") {
		return e.Transport == EndpointUDP
	}
	switch e.Transport {
	case EndpointTor:
		return true
	case EndpointUDP, EndpointTCP:
	default:
		return false
	}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return ap.Port() != 0 && !unroutableDirect(ap.Addr())
	}
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return false
	}
	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(addr[:i]), "["), "]")
	port, err := strconv.ParseUint(strings.TrimSpace(addr[i+1:]), 10, 16)
	if host == "" || err != nil || port == 0 || equalFoldASCII(host, "localhost") {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return !unroutableDirect(ip)
	}
	return true
}

// ValidateAdvert checks and normalizes an advert as upstream does: the
// identifier and version, endpoints non-empty before and after the
// publicly-usable filter, and signalRelays/stunServers required with a
// udp:nat endpoint and stripped without one.
func ValidateAdvert(a OverlayAdvert) (OverlayAdvert, error) {
	return validateAdvert(a, AdvertIdentifier)
}

func validateAdvert(a OverlayAdvert, identifier string) (OverlayAdvert, error) {
	if a.Identifier != identifier {
		return a, fmt.Errorf("%w: unsupported identifier %q", ErrInvalidAdvert, a.Identifier)
	}
	if a.Version != AdvertVersion {
		return a, fmt.Errorf("%w: unsupported version '%d'", ErrInvalidAdvert, a.Version)
	}
	if len(a.Endpoints) == 0 {
		return a, fmt.Errorf("%w: missing required endpoints", ErrInvalidAdvert)
	}
	kept := a.Endpoints[:0:0]
	for _, e := range a.Endpoints {
		if PubliclyUsable(e) {
			kept = append(kept, e)
		}
	}
	a.Endpoints = kept
	if len(a.Endpoints) == 0 {
		return a, fmt.Errorf("%w: missing publicly routable endpoints", ErrInvalidAdvert)
	}
	if a.HasNAT() {
		if len(a.SignalRelays) == 0 {
			return a, fmt.Errorf("%w: udp:nat endpoint requires signalRelays", ErrInvalidAdvert)
		}
		if len(a.StunServers) == 0 {
			return a, fmt.Errorf("%w: udp:nat endpoint requires stunServers", ErrInvalidAdvert)
		}
	} else {
		a.SignalRelays, a.StunServers = nil, nil
	}
	return a, nil
}

// DecodeAdvertContent parses an advert's JSON content. An endpoint with a
// transport other than udp, tcp or tor fails the whole advert, as serde
// does upstream.
func DecodeAdvertContent(content []byte) (OverlayAdvert, error) {
	var a OverlayAdvert
	if err := json.Unmarshal(content, &a); err != nil {
		return a, fmt.Errorf("%w: %w", ErrInvalidAdvert, err)
	}
	if a.Endpoints == nil {
		return a, fmt.Errorf("%w: missing field `endpoints`", ErrInvalidAdvert)
	}
	for _, e := range a.Endpoints {
		switch e.Transport {
		case EndpointUDP, EndpointTCP, EndpointTor:
		default:
			return a, fmt.Errorf("%w: unknown transport %q", ErrInvalidAdvert, e.Transport)
		}
	}
	return a, nil
}

// ParseAdvertEvent checks a kind-37195 event's id and signature, its
// protocol tag against app, and its content. It does not judge freshness
// (see ValidUntilMs).
func ParseAdvertEvent(ev *nostr.Event, app string) (OverlayAdvert, error) {
	return ParseAdvertEventIn(ev, Namespace{Identifier: AdvertIdentifier, App: app})
}

// ParseAdvertEventIn is ParseAdvertEvent for the namespace ns: the
// protocol tag must be ns.App and the body's identifier ns.Identifier.
func ParseAdvertEventIn(ev *nostr.Event, ns Namespace) (OverlayAdvert, error) {
	app := ns.App
	if err := CheckEvent(ev); err != nil {
		return OverlayAdvert{}, err
	}
	if ev.Kind != AdvertKind {
		return OverlayAdvert{}, fmt.Errorf("%w: kind %d is not an overlay advert", ErrInvalidAdvert, ev.Kind)
	}
	t := ev.Tags.GetFirst([]string{"protocol", ""})
	if t == nil || len(*t) < 2 {
		return OverlayAdvert{}, fmt.Errorf("%w: missing required protocol tag", ErrInvalidAdvert)
	}
	if (*t)[1] != app {
		return OverlayAdvert{}, fmt.Errorf("%w: unsupported protocol '%s'", ErrInvalidAdvert, (*t)[1])
	}
	a, err := DecodeAdvertContent([]byte(ev.Content))
	if err != nil {
		return a, err
	}
	return validateAdvert(a, ns.Identifier)
}

// CheckEvent verifies an event as standard Nostr tooling does: the id is
// the hash of its serialization and the BIP-340 signature is the author's.
func CheckEvent(ev *nostr.Event) error {
	// go-nostr's CheckID indexes the id without checking its length.
	if !isLowerHex(ev.ID, 64) || !isLowerHex(ev.PubKey, 64) || !isLowerHex(ev.Sig, 128) {
		return fmt.Errorf("%w: id, pubkey or sig is not lowercase hex of the right length", ErrInvalidEvent)
	}
	if !ev.CheckID() {
		return fmt.Errorf("%w: id does not match the event", ErrInvalidEvent)
	}
	ok, err := ev.CheckSignature()
	if err != nil {
		return fmt.Errorf("%w: signature: %w", ErrInvalidEvent, err)
	}
	if !ok {
		return fmt.Errorf("%w: bad signature", ErrInvalidEvent)
	}
	return nil
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// expirationMs is the event's NIP-40 expiration in ms, if it has one.
func expirationMs(ev *nostr.Event) (uint64, bool) {
	t := ev.Tags.GetFirst([]string{"expiration", ""})
	if t == nil || len(*t) < 2 {
		return 0, false
	}
	v, err := strconv.ParseUint((*t)[1], 10, 63)
	if err != nil {
		return 0, false
	}
	return satMul(v, 1000), true
}

func satMul(a, b uint64) uint64 {
	if a != 0 && a*b/a != b {
		return ^uint64(0)
	}
	return a * b
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// ValidUntilMs is upstream's compute_advert_valid_until_ms: the earlier of
// the expiration tag and created_at plus maxAgeMs, or false when that is
// already past (or the event has expired).
func ValidUntilMs(ev *nostr.Event, maxAgeMs, nowMs uint64) (uint64, bool) {
	exp, hasExp := expirationMs(ev)
	if hasExp && exp <= nowMs {
		return 0, false
	}
	created := satMul(uint64(max(ev.CreatedAt, 0)), 1000)
	until := satAdd(created, maxAgeMs)
	if until <= nowMs {
		return 0, false
	}
	if hasExp && exp < until {
		until = exp
	}
	return until, until > nowMs
}

// CachedAdvert is one peer's advert as the cache holds it.
type CachedAdvert struct {
	AuthorHex    string
	Advert       OverlayAdvert
	CreatedAt    int64 // seconds
	ValidUntilMs uint64
	seq          uint64 // insertion order: strangers are evicted oldest-received first
}

// AdvertCache holds the newest valid advert per author. Wanted authors
// (the configured peers) have a reserved part: their entries never count
// against max and are never evicted for room, so no number of strangers'
// adverts can push them out. Strangers' entries are bounded to max, and
// when full the oldest-received stranger goes: unlike an advert's expiry,
// the order of reception is not the author's to choose. Not safe for
// concurrent use.
type AdvertCache struct {
	max     int
	seq     uint64
	wanted  map[string]bool
	proven  map[string]uint64 // author → when marked (c.seq), at most provenMax
	entries map[string]*CachedAdvert
	// Evicted counts strangers' entries dropped for room; Rejected events
	// refused as expired or older than the entry they would replace.
	Evicted, Rejected uint64
}

// NewAdvertCache makes a cache bounded to max strangers' entries (at
// least 1).
func NewAdvertCache(limit int) *AdvertCache {
	return &AdvertCache{max: max(limit, 1), entries: map[string]*CachedAdvert{}, wanted: map[string]bool{},
		proven: map[string]uint64{}}
}

// provenMax bounds the proven authors remembered; past it the one marked
// longest ago is forgotten.
const provenMax = 1024

// MarkProven notes a stranger the node has linked to (an open-discovery
// peer): its entry is evicted only after every unproven stranger's.
func (c *AdvertCache) MarkProven(authorHex string) {
	c.seq++
	c.proven[authorHex] = c.seq
	if len(c.proven) <= provenMax {
		return
	}
	oldest, at := "", ^uint64(0)
	for a, s := range c.proven {
		if s < at {
			oldest, at = a, s
		}
	}
	delete(c.proven, oldest)
}

// evictBefore orders strangers' entries for eviction: unproven before
// proven, then oldest-received first.
func (c *AdvertCache) evictBefore(a, b *CachedAdvert) int {
	_, pa := c.proven[a.AuthorHex]
	_, pb := c.proven[b.AuthorHex]
	if pa != pb {
		if pb {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.seq, b.seq)
}

// SetWanted replaces the wanted authors (hex keys), whose entries are
// kept apart from strangers'. Its size is the operator's, not the
// network's.
func (c *AdvertCache) SetWanted(authorsHex []string) {
	c.wanted = make(map[string]bool, len(authorsHex))
	for _, a := range authorsHex {
		c.wanted[a] = true
	}
}

// Wanted reports whether the author's entries are reserved.
func (c *AdvertCache) Wanted(authorHex string) bool { return c.wanted[authorHex] }

// Proven reports whether the author was marked proven (MarkProven).
func (c *AdvertCache) Proven(authorHex string) bool {
	_, ok := c.proven[authorHex]
	return ok
}

// Len is the number of entries.
func (c *AdvertCache) Len() int { return len(c.entries) }

// Insert caches an advert unless a newer one from the same author is
// held or it is no longer valid. It reports whether it was stored.
func (c *AdvertCache) Insert(e CachedAdvert, nowMs uint64) bool {
	if e.ValidUntilMs <= nowMs {
		c.Rejected++
		return false
	}
	if old := c.entries[e.AuthorHex]; old != nil && e.CreatedAt < old.CreatedAt {
		c.Rejected++
		return false
	}
	c.seq++
	e.seq = c.seq
	c.entries[e.AuthorHex] = &e
	c.Prune(nowMs)
	return true
}

// Get returns the author's valid advert.
func (c *AdvertCache) Get(authorHex string, nowMs uint64) (CachedAdvert, bool) {
	e := c.entries[authorHex]
	if e == nil || e.ValidUntilMs <= nowMs {
		return CachedAdvert{}, false
	}
	return *e, true
}

// Remove drops the author's entry.
func (c *AdvertCache) Remove(authorHex string) { delete(c.entries, authorHex) }

// Prune drops expired entries, then evicts strangers' entries, those of
// unproven ones first and the oldest-received first, until they are
// within the bound; it returns how many it evicted for room.
func (c *AdvertCache) Prune(nowMs uint64) int {
	strangers := 0
	for k, e := range c.entries {
		switch {
		case e.ValidUntilMs <= nowMs:
			delete(c.entries, k)
		case !c.wanted[k]:
			strangers++
		}
	}
	over := strangers - c.max
	if over <= 0 {
		return 0
	}
	if over == 1 { // the common case, one insert at the bound: one pass
		var oldest *CachedAdvert
		for k, e := range c.entries {
			if !c.wanted[k] && (oldest == nil || c.evictBefore(e, oldest) < 0) {
				oldest = e
			}
		}
		delete(c.entries, oldest.AuthorHex)
	} else {
		var all []*CachedAdvert
		for k, e := range c.entries {
			if !c.wanted[k] {
				all = append(all, e)
			}
		}
		slices.SortFunc(all, c.evictBefore)
		for _, e := range all[:over] {
			delete(c.entries, e.AuthorHex)
		}
	}
	c.Evicted += uint64(over)
	return over
}

// Sample returns up to limit valid entries other than skipHex's, chosen
// uniformly at random and in random order: which strangers an
// open-discovery sweep looks at must not follow anything an author
// chooses (its key, its expiry, when it published).
func (c *AdvertCache) Sample(nowMs uint64, skipHex string, limit int) []CachedAdvert {
	var all []*CachedAdvert
	for k, e := range c.entries {
		if e.ValidUntilMs > nowMs && k != skipHex {
			all = append(all, e)
		}
	}
	// A partial Fisher-Yates shuffle: only the limit picked are drawn.
	n := min(max(limit, 0), len(all))
	out := make([]CachedAdvert, 0, n)
	for i := range n {
		j := i + rand.IntN(len(all)-i)
		all[i], all[j] = all[j], all[i]
		out = append(out, *all[i])
	}
	return out
}

// AdvertMaxAgeMs is how long after its created_at an advert stays
// cached: ttl without an expiration tag, and at most AdvertCacheGrace
// ttls with one (which ends it sooner, as every advert upstream
// publishes has). An advert without the tag never outlives a genuine one.
func AdvertMaxAgeMs(ev *nostr.Event, ttlMs uint64) uint64 {
	if _, ok := expirationMs(ev); ok {
		return satMul(AdvertCacheGrace, ttlMs)
	}
	return ttlMs
}

// BuildAdvertEvent makes the unsigned kind-37195 event for an advert, with
// upstream's tags in order: d, protocol, version, expiration.
func BuildAdvertEvent(pubHex string, a OverlayAdvert, app string, ttlSecs uint64, nowMs uint64) (nostr.Event, error) {
	content, err := json.Marshal(a)
	if err != nil {
		return nostr.Event{}, fmt.Errorf("encode advert: %w", err)
	}
	exp := satAdd(nowMs, satMul(ttlSecs, 1000)) / 1000
	return nostr.Event{
		PubKey:    pubHex,
		CreatedAt: nostr.Timestamp(nowMs / 1000),
		Kind:      AdvertKind,
		Tags: nostr.Tags{
			{"d", a.Identifier},
			{"protocol", app},
			{"version", ProtocolVersion},
			{"expiration", strconv.FormatUint(exp, 10)},
		},
		Content: string(content),
	}, nil
}

// InboxRelays reads a kind-10050 event's relays from both "relay" (the
// NIP-17 form) and "r" (what upstream publishes) tags, in order, without
// duplicates.
func InboxRelays(ev *nostr.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range ev.Tags {
		if len(t) >= 2 && (t[0] == "relay" || t[0] == "r") {
			if u := strings.TrimSpace(t[1]); u != "" && !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// NormalizeRelayURL is the form relay URLs are compared in: go-nostr's
// normalization (scheme and host lower-cased, trailing slash dropped).
func NormalizeRelayURL(u string) string { return nostr.NormalizeURL(strings.TrimSpace(u)) }

// SignalRelays is upstream's signal_relays: the inbox list, then the
// peer advert's signalRelays, then our dm_relays, merged without
// duplicates, keeping only relays in our own pool.
func SignalRelays(inbox, advert, dm, pool []string) []string {
	inPool := map[string]bool{}
	for _, p := range pool {
		if n := NormalizeRelayURL(p); n != "" {
			inPool[n] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, list := range [][]string{inbox, advert, dm} {
		for _, u := range list {
			n := NormalizeRelayURL(u)
			if n == "" || seen[n] || !inPool[n] {
				continue
			}
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
