//go:build ignore

/*
 * xdp_fips.c: XDP early verdicts for FIPS FMP over UDP and over Ethernet.
 *
 * Ethernet -> IPv4 (any IHL) / IPv6 (no extension headers) -> UDP to one of
 * the configured ports -> the FMP prefix; or, on an interface listed in
 * eth_ifaces, Ethernet with that interface's FIPS EtherType -> the FIPS
 * Ethernet frame (type 0 data: u16 LE length, then the FMP packet; type 1:
 * a beacon). With config.next it also takes upstream's `next` line (FMP
 * version 1: XX handshakes in three packets, Ethernet data behind a 4-byte
 * header, 5-byte beacons; docs/next.md). No cryptography runs here: the
 * kernel has no ChaCha20-Poly1305 for BPF programs, so the program judges
 * only what is in the clear (version, phase, flags, payload_len, receiver
 * index) and leaves authentication to userspace.
 *
 * Every outcome is counted in `stats` at index verdict * REASON_MAX + reason.
 */

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

char __license[] SEC("license") = "Dual MIT/GPL";

/* What the program did with a frame. */
enum fips_verdict {
	VERDICT_PASS,     /* XDP_PASS: the kernel stack and its UDP socket */
	VERDICT_DROP,     /* XDP_DROP */
	VERDICT_REDIRECT, /* XDP_REDIRECT into the xsks slot of the link */
	VERDICT_MAX,
};

/* Why. Each reason belongs to exactly one verdict. */
enum fips_reason {
	REASON_DISABLED,        /* pass: config.enabled is 0 */
	REASON_NOT_IP,          /* pass: EtherType neither IPv4 nor IPv6 (VLAN tags too) */
	REASON_SHORT,           /* pass: frame ends inside the Ethernet, IP or UDP header */
	REASON_MALFORMED,       /* pass: bad IP version/IHL, UDP length < 8 or beyond the frame */
	REASON_IP_FRAGMENT,     /* pass: IPv4 fragment, no whole datagram to judge */
	REASON_IPV6_EXT,        /* pass: IPv6 extension header before the transport */
	REASON_NOT_UDP,         /* pass: another transport protocol */
	REASON_OTHER_PORT,      /* pass: UDP to a port that is not FIPS */
	REASON_FMP_SHORT,       /* drop: FIPS port, payload shorter than the 4-byte prefix */
	REASON_BAD_VERSION,     /* drop: FMP version is not 0 (nor 1 with config.next) */
	REASON_BAD_PHASE,       /* drop: phase is not 0, 1 or 2 (3 too on version 1) */
	REASON_BAD_LENGTH,      /* drop: length or payload_len wrong for the phase */
	REASON_BAD_FLAGS,       /* drop: handshake packet with non-zero flags */
	REASON_UNKNOWN_INDEX,   /* drop: established frame, receiver index not in links */
	REASON_LINK_KERNEL,     /* pass: established frame of a known link, no XSK for its interface and queue */
	REASON_LINK_XSK,        /* redirect: established frame of a known link into its queue's XSK */
	REASON_HANDSHAKE,       /* pass: msg1/msg2 (and v1 msg3) within the source's token bucket */
	REASON_RATE_LIMITED,    /* drop: msg1/msg2 (and v1 msg3) over the source's token bucket */
	REASON_RATELIMIT_ERROR, /* pass: the source's bucket could not be stored */
	REASON_MULTI_BUFFER,    /* pass: FIPS port, a frame in several buffers (loaded with xdp.frags: a jumbo frame) */
	REASON_NOT_LOCAL,       /* pass: FIPS port, destination not a local address (config.local_only): traffic this host routes */
	REASON_ETH_SHORT,       /* drop: FIPS EtherType, frame ends in the 3-byte header or before its length field's end */
	REASON_ETH_BAD_TYPE,    /* drop: FIPS EtherType, frame type neither data (0) nor beacon (1) */
	REASON_BEACON,          /* pass: beacon within its source MAC's token bucket */
	REASON_BAD_BEACON,      /* drop: beacon neither master's (34 bytes, version 1) nor, with config.next, next's (5 bytes) */
	REASON_BEACON_LIMITED,  /* drop: beacon over its source MAC's token bucket */
	REASON_MAX,
};

/* Keep both enums in the object's BTF for bpf2go -type and TestEnumsMatchC. */
const enum fips_verdict *unused_fips_verdict __attribute__((unused));
const enum fips_reason *unused_fips_reason __attribute__((unused));

#define FIPS_MAX_PORTS 4

/* The single entry of `config`, written by the control plane. */
struct fips_config {
	__u32 enabled;                /* 0: pass everything as REASON_DISABLED */
	__u16 ports[FIPS_MAX_PORTS];  /* host order; 0 = unused slot */
	__u32 rate;                   /* handshake packets per second per source */
	__u32 burst;                  /* bucket depth in packets; 0 = no handshake limit */
	__u64 clock_ns;               /* tests only: non-zero replaces bpf_ktime_get_ns */
	__u32 local_only;             /* 1: act only on frames to an address in local_addrs */
	__u32 next;                   /* 1: also accept upstream next's FMP version 1 */
};

/* Value of `links`: one receiver index of this node's links. */
struct fips_link {
	__u32 slot;  /* reserved, 0: the XSK is chosen by interface and queue */
	__u32 flags; /* reserved, 0 */
};

/* Key of `xsk_slots`: the interface and RX queue a frame arrived on. An
 * XSK receives only frames of the queue it is bound to. */
struct fips_xsk_key {
	__u32 ifindex;
	__u32 queue;
};

/* Key of `ratelimit`: the source, IPv4 as ::ffff:a.b.c.d, IPv6 as its /64
 * (the rest zero): one IPv6 host picks addresses freely within its /64, and
 * keyed by exact address it would get 2^64 buckets. A MAC source has byte 8
 * set (1: handshakes, 2: beacons; zero in both IP forms) and the MAC in
 * bytes 10-15. */
struct fips_addr {
	__u8 addr[16];
};

/* Value of `ratelimit`: a token bucket in nano-tokens (1e9 per packet). */
struct fips_bucket {
	__u64 last_ns;
	__u64 tokens;
};

struct fips_counter {
	__u64 packets;
	__u64 bytes;
};

#define NS_PER_TOKEN 1000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fips_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); /* receiver index: chosen by this node, unique across its links */
	__type(value, struct fips_link);
} links SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct fips_xsk_key);
	__type(value, __u32); /* xsks key */
} xsk_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fips_addr);
	__type(value, struct fips_bucket);
} ratelimit SEC(".maps");

/* The node's own addresses (IPv4 as ::ffff:a.b.c.d), written by the
 * control plane: the bound address, or for a wildcard bind every address
 * of the host, kept current from netlink. With config.local_only set, a
 * frame to a FIPS port whose destination is not here belongs to another
 * host (this one routes it) and passes untouched as REASON_NOT_LOCAL. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct fips_addr);
	__type(value, __u8);
} local_addrs SEC(".maps");

/* The interfaces an Ethernet transport runs on, by ifindex, with its
 * EtherType in network order. Frames of another EtherType, or on another
 * interface, take the IP path. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u16);
} eth_ifaces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VERDICT_MAX * REASON_MAX);
	__type(key, __u32);
	__type(value, struct fips_counter);
} stats SEC(".maps");

static __always_inline void count(struct xdp_md *ctx, enum fips_verdict v, enum fips_reason r)
{
	__u32 key = (__u32)v * REASON_MAX + (__u32)r;
	struct fips_counter *c = bpf_map_lookup_elem(&stats, &key);

	if (c) {
		c->packets++;
		c->bytes += bpf_xdp_get_buff_len(ctx); /* every buffer of a multi-buffer frame */
	}
}

static __always_inline int pass(struct xdp_md *ctx, enum fips_reason r)
{
	count(ctx, VERDICT_PASS, r);
	return XDP_PASS;
}

static __always_inline int drop(struct xdp_md *ctx, enum fips_reason r)
{
	count(ctx, VERDICT_DROP, r);
	return XDP_DROP;
}

static __always_inline int fips_port(const struct fips_config *cfg, __u16 port)
{
	if (port == 0)
		return 0;
#pragma unroll
	for (int i = 0; i < FIPS_MAX_PORTS; i++)
		if (cfg->ports[i] == port)
			return 1;
	return 0;
}

static __always_inline int ipv6_ext(__u8 nexthdr)
{
	switch (nexthdr) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_FRAGMENT:
	case IPPROTO_AH:
	case IPPROTO_DSTOPTS:
	case IPPROTO_MH:
	case 139: /* HIP */
	case 140: /* Shim6 */
	case 253: /* experimental */
	case 254:
		return 1;
	}
	return 0;
}

/* Whether the frame's destination is one of the node's addresses; always
 * true without config.local_only. eth is an IPv4 or IPv6 frame whose
 * header the caller has already bounds-checked. */
static __always_inline int dst_local(const struct fips_config *cfg, const struct ethhdr *eth, void *end)
{
	struct fips_addr dst = {};

	if (!cfg->local_only)
		return 1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		const struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end)
			return 0;
		dst.addr[10] = 0xff;
		dst.addr[11] = 0xff;
		__builtin_memcpy(&dst.addr[12], &ip->daddr, 4);
	} else {
		const struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return 0;
		__builtin_memcpy(dst.addr, ip6->daddr, 16);
	}
	return bpf_map_lookup_elem(&local_addrs, &dst) != NULL;
}

/* What a token bucket said. */
enum bucket_verdict {
	BUCKET_OK,
	BUCKET_EMPTY,
	BUCKET_ERROR,
};

/* Token bucket per source: burst packets at once, rate per second after. */
static __always_inline enum bucket_verdict take_token(const struct fips_config *cfg, const struct fips_addr *src)
{
	__u32 burst = cfg->burst;
	__u32 rate = cfg->rate;
	__u64 cap, now, tokens;
	struct fips_bucket *b;

	if (burst == 0)
		return BUCKET_OK;
	now = cfg->clock_ns ? cfg->clock_ns : bpf_ktime_get_ns();
	cap = (__u64)burst * NS_PER_TOKEN;

	b = bpf_map_lookup_elem(&ratelimit, src);
	if (!b) {
		struct fips_bucket nb = { .last_ns = now, .tokens = cap - NS_PER_TOKEN };

		if (bpf_map_update_elem(&ratelimit, src, &nb, BPF_ANY))
			return BUCKET_ERROR;
		return BUCKET_OK;
	}

	/* Concurrent CPUs may race on one bucket; the limit is then approximate. */
	tokens = b->tokens;
	if (tokens > cap)
		tokens = cap;
	if (now > b->last_ns) {
		__u64 elapsed = now - b->last_ns;

		if (rate) {
			__u64 room = cap - tokens;

			/* elapsed * rate cannot overflow: elapsed <= room / rate here. */
			if (elapsed > room / rate)
				tokens = cap;
			else
				tokens += elapsed * rate;
		}
		b->last_ns = now;
	}
	if (tokens < NS_PER_TOKEN) {
		b->tokens = tokens;
		return BUCKET_EMPTY;
	}
	b->tokens = tokens - NS_PER_TOKEN;
	return BUCKET_OK;
}

static __always_inline int handshake(struct xdp_md *ctx, const struct fips_config *cfg,
				     const struct fips_addr *src)
{
	switch (take_token(cfg, src)) {
	case BUCKET_EMPTY:
		return drop(ctx, REASON_RATE_LIMITED);
	case BUCKET_ERROR:
		return pass(ctx, REASON_RATELIMIT_ERROR);
	default:
		return pass(ctx, REASON_HANDSHAKE);
	}
}

/* The encrypted negotiation payload after a version-1 msg2 or msg3: at
 * most 1,024 bytes and its tag (control/wire MaxXXPayload). */
#define V1_MAX_EXTRA (1024 + 16)

/* judge_fmp gives the verdict on the FMP packet of total bytes at fmp (its
 * carrier, UDP or FIPS Ethernet, already bounds-checked against end): the
 * established frames of known links to the XSK of their queue, handshakes
 * through src's token bucket, the rest dropped. */
static __always_inline int judge_fmp(struct xdp_md *ctx, const struct fips_config *cfg, __u8 *fmp,
				     __u32 total, void *end, const struct fips_addr *src)
{
	__u16 plen;

	if (total < 4 || (void *)(fmp + 4) > end)
		return drop(ctx, REASON_FMP_SHORT);

	if ((fmp[0] >> 4) > 1 || ((fmp[0] >> 4) == 1 && !cfg->next))
		return drop(ctx, REASON_BAD_VERSION);
	plen = (__u16)fmp[2] | (__u16)fmp[3] << 8;

	switch (fmp[0]) {
	case 0x00:   /* established: 16-byte header, ciphertext, 16-byte tag */
	case 0x10: { /* the same on version 1 */
		struct fips_xsk_key xk = { .ifindex = ctx->ingress_ifindex, .queue = ctx->rx_queue_index };
		struct fips_link *l;
		__u32 idx, *slot;

		if (total < 32 || plen != total - 32 || (void *)(fmp + 8) > end)
			return drop(ctx, REASON_BAD_LENGTH);
		idx = (__u32)fmp[4] | (__u32)fmp[5] << 8 | (__u32)fmp[6] << 16 | (__u32)fmp[7] << 24;
		l = bpf_map_lookup_elem(&links, &idx);
		if (!l)
			return drop(ctx, REASON_UNKNOWN_INDEX);
		slot = bpf_map_lookup_elem(&xsk_slots, &xk);
		if (slot && bpf_map_lookup_elem(&xsks, slot)) {
			long rc = bpf_redirect_map(&xsks, *slot, XDP_PASS);

			if (rc == XDP_REDIRECT) {
				count(ctx, VERDICT_REDIRECT, REASON_LINK_XSK);
				return XDP_REDIRECT;
			}
		}
		return pass(ctx, REASON_LINK_KERNEL);
	}
	case 0x01: /* Noise IK msg1: 114 bytes, payload_len 110 */
		if (total != 114 || plen != 110)
			return drop(ctx, REASON_BAD_LENGTH);
		break;
	case 0x02: /* Noise IK msg2: 69 bytes, payload_len 65 */
		if (total != 69 || plen != 65)
			return drop(ctx, REASON_BAD_LENGTH);
		break;
	case 0x11: /* Noise XX msg1: 41 bytes, payload_len 37 */
		if (total != 41 || plen != 37)
			return drop(ctx, REASON_BAD_LENGTH);
		break;
	case 0x12: /* XX msg2: 118 bytes and an encrypted payload */
		if (total < 118 || total > 118 + V1_MAX_EXTRA || plen != total - 4)
			return drop(ctx, REASON_BAD_LENGTH);
		break;
	case 0x13: /* XX msg3: 85 bytes and an encrypted payload */
		if (total < 85 || total > 85 + V1_MAX_EXTRA || plen != total - 4)
			return drop(ctx, REASON_BAD_LENGTH);
		break;
	default:
		return drop(ctx, REASON_BAD_PHASE);
	}
	if (fmp[1] != 0)
		return drop(ctx, REASON_BAD_FLAGS);
	return handshake(ctx, cfg, src);
}

/* fips_ethernet judges a frame of an Ethernet transport's EtherType on its
 * interface: data frames as FMP (handshakes limited per source MAC),
 * beacons through their own per-MAC bucket, the rest dropped. Padding after
 * a data frame's length is ignored (the NIC pads short frames). */
static __always_inline int fips_ethernet(struct xdp_md *ctx, const struct fips_config *cfg,
					 struct ethhdr *eth, void *data, void *end)
{
	struct fips_addr src = {};
	__u8 *p = (void *)(eth + 1);
	__u32 len;

	if (bpf_xdp_get_buff_len(ctx) > (__u64)(end - data))
		return pass(ctx, REASON_MULTI_BUFFER);
	if ((void *)(p + 1) > end)
		return drop(ctx, REASON_ETH_SHORT);
	__builtin_memcpy(&src.addr[10], eth->h_source, 6);
	switch (p[0]) {
	case 0:
		src.addr[8] = 1;
		/* next's 4-byte header [0][flags 0][len LE] is told from master's
		 * 3-byte [0][len LE] by a zero byte 1 and a version-1 FMP byte
		 * after it: master's FMP packet starts with its flags byte there
		 * (at most 0x07), never 0x1X (docs/next.md 15.2). */
		if ((void *)(p + 5) <= end && p[1] == 0 && (p[4] >> 4) == 1) {
			len = (__u32)p[2] | (__u32)p[3] << 8;
			if ((void *)(p + 4) + len > end)
				return drop(ctx, REASON_ETH_SHORT);
			return judge_fmp(ctx, cfg, p + 4, len, end, &src);
		}
		if ((void *)(p + 3) > end)
			return drop(ctx, REASON_ETH_SHORT);
		len = (__u32)p[1] | (__u32)p[2] << 8;
		if ((void *)(p + 3) + len > end)
			return drop(ctx, REASON_ETH_SHORT);
		return judge_fmp(ctx, cfg, p + 3, len, end, &src);
	case 1:
		/* master: type, version 1, the 32-byte x-only key; next: type,
		 * flags 0, length >= 1 (LE), version 1; the rest padding. */
		if ((void *)(p + 2) > end)
			return drop(ctx, REASON_BAD_BEACON);
		if (p[1] == 1) {
			if ((void *)(p + 34) > end)
				return drop(ctx, REASON_BAD_BEACON);
		} else if (!cfg->next || (void *)(p + 5) > end || p[1] != 0 || (p[2] == 0 && p[3] == 0) || p[4] != 1) {
			return drop(ctx, REASON_BAD_BEACON);
		}
		src.addr[8] = 2;
		switch (take_token(cfg, &src)) {
		case BUCKET_EMPTY:
			return drop(ctx, REASON_BEACON_LIMITED);
		case BUCKET_ERROR:
			return pass(ctx, REASON_RATELIMIT_ERROR);
		default:
			return pass(ctx, REASON_BEACON);
		}
	default:
		return drop(ctx, REASON_ETH_BAD_TYPE);
	}
}

SEC("xdp")
int xdp_fips(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct fips_addr src = {};
	struct fips_config *cfg;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u32 zero = 0, ulen, total;
	__u32 ifindex = ctx->ingress_ifindex;
	__u16 *ethertype;

	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || !cfg->enabled)
		return pass(ctx, REASON_DISABLED);

	if ((void *)(eth + 1) > end)
		return pass(ctx, REASON_SHORT);

	ethertype = bpf_map_lookup_elem(&eth_ifaces, &ifindex);
	if (ethertype && eth->h_proto == *ethertype)
		return fips_ethernet(ctx, cfg, eth, data, end);

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 hl;

		if ((void *)(ip + 1) > end)
			return pass(ctx, REASON_SHORT);
		if ((ip->ver_ihl >> 4) != 4 || (ip->ver_ihl & 0xf) < 5)
			return pass(ctx, REASON_MALFORMED);
		hl = (ip->ver_ihl & 0xf) * 4;
		if ((void *)ip + hl > end)
			return pass(ctx, REASON_SHORT);
		if (ip->frag_off & bpf_htons(IP_MF | IP_OFFMASK))
			return pass(ctx, REASON_IP_FRAGMENT);
		if (ip->protocol != IPPROTO_UDP)
			return pass(ctx, REASON_NOT_UDP);
		udp = (void *)ip + hl;
		src.addr[10] = 0xff;
		src.addr[11] = 0xff;
		__builtin_memcpy(&src.addr[12], &ip->saddr, 4);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return pass(ctx, REASON_SHORT);
		if ((bpf_ntohl(ip6->ver_tc_flow) >> 28) != 6)
			return pass(ctx, REASON_MALFORMED);
		if (ip6->nexthdr != IPPROTO_UDP)
			return pass(ctx, ipv6_ext(ip6->nexthdr) ? REASON_IPV6_EXT : REASON_NOT_UDP);
		udp = (void *)(ip6 + 1);
		__builtin_memcpy(src.addr, ip6->saddr, 8);
	} else {
		return pass(ctx, REASON_NOT_IP);
	}

	if ((void *)(udp + 1) > end)
		return pass(ctx, REASON_SHORT);
	if (!fips_port(cfg, bpf_ntohs(udp->dest)))
		return pass(ctx, REASON_OTHER_PORT);
	/* On a router a FIPS port alone does not make a frame this node's:
	 * other hosts' FIPS traffic crosses it too, and must not be judged. */
	if (!dst_local(cfg, eth, end))
		return pass(ctx, REASON_NOT_LOCAL);
	/* Loaded with BPF_F_XDP_HAS_FRAGS, the program also sees frames in
	 * several buffers (a jumbo frame on a device whose MTU exceeds a
	 * page). Only the first buffer is in [data, end), so the kernel's UDP
	 * socket judges them; an XSK without XDP_USE_SG could not take them
	 * anyway. */
	if (bpf_xdp_get_buff_len(ctx) > (__u64)(end - data))
		return pass(ctx, REASON_MULTI_BUFFER);
	/* The UDP length, not the frame, bounds the payload: Ethernet pads. */
	ulen = bpf_ntohs(udp->len);
	if (ulen < sizeof(*udp) || (void *)udp + ulen > end)
		return pass(ctx, REASON_MALFORMED);
	total = ulen - sizeof(*udp);
	return judge_fmp(ctx, cfg, (void *)(udp + 1), total, end, &src);
}
