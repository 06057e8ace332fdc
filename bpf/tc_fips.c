//go:build ignore

/*
 * tc_fips.c: ECN for FIPS FMP over UDP at the underlay interfaces.
 *
 * tc_fips_egress marks every FIPS datagram the node sends (UDP from one of
 * the configured ports, IPv4 or IPv6, from a local socket) ECT(0) when its
 * outer header is Not-ECT,
 * so ECN-capable routers on the underlay mark congestion instead of
 * dropping; an IPv4 header checksum is updated incrementally (RFC 1624).
 * A header already carrying ECT(0), ECT(1) or CE is left as it is, and so
 * is a packet without a socket (skb->sk NULL): one this host forwards for
 * others, whose source port being a FIPS port says nothing.
 *
 * tc_fips_ingress counts the outer ECN codepoint of every incoming FIPS
 * datagram (UDP to a configured port). It cannot set the FMP CE flag
 * itself: the 16-byte FMP header, flags byte included, is the AEAD's
 * associated data, so a changed flag fails authentication at the
 * receiver. The receiving worker reads the outer codepoint from the
 * socket (IP_RECVTOS / IPV6_RECVTCLASS) and treats outer CE as FMP CE.
 *
 * Neither program drops, redirects or changes anything else: both return
 * TC_ACT_UNSPEC (tcx's TCX_NEXT), leaving the packet to the next program
 * and the stack. Every outcome is counted in `tc_stats` at index
 * dir * TC_REASON_MAX + reason.
 */

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

char __license[] SEC("license") = "Dual MIT/GPL";

/* Which program counted. */
enum fips_tc_dir {
	TC_DIR_EGRESS,
	TC_DIR_INGRESS,
	TC_DIR_MAX,
};

/* What it saw. Both directions share the first six reasons. */
enum fips_tc_reason {
	TC_REASON_DISABLED,   /* config.enabled is 0 */
	TC_REASON_NOT_IP,     /* EtherType neither IPv4 nor IPv6 */
	TC_REASON_SHORT,      /* the packet ends inside the IP or UDP header */
	TC_REASON_NOT_UDP,    /* another transport, bad IP version or IHL */
	TC_REASON_FRAGMENT,   /* IPv4 fragment or IPv6 extension header */
	TC_REASON_OTHER_PORT, /* UDP, but not from (egress) / to (ingress) a FIPS port */
	TC_REASON_MARKED,     /* egress: Not-ECT, now ECT(0) */
	TC_REASON_ECN_KEPT,   /* egress: already ECT(0), ECT(1) or CE */
	TC_REASON_NOT_ECT,    /* ingress: Not-ECT */
	TC_REASON_ECT,        /* ingress: ECT(0) or ECT(1) */
	TC_REASON_CE,         /* ingress: CE, congestion on the underlay path */
	TC_REASON_FORWARDED,  /* egress: FIPS port, but no local socket: forwarded, left as it is */
	TC_REASON_MAX,
};

const enum fips_tc_dir *unused_fips_tc_dir __attribute__((unused));
const enum fips_tc_reason *unused_fips_tc_reason __attribute__((unused));

#define FIPS_MAX_PORTS 4

#define ECN_MASK 0x3
#define ECN_NOT_ECT 0x0
#define ECN_ECT1 0x1
#define ECN_ECT0 0x2
#define ECN_CE 0x3

/* The single entry of `tc_config`, written by the control plane. */
struct fips_tc_config {
	__u32 enabled;               /* 0: count everything as TC_REASON_DISABLED */
	__u16 ports[FIPS_MAX_PORTS]; /* host order; 0 = unused slot */
};

struct fips_counter {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fips_tc_config);
} tc_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TC_DIR_MAX * TC_REASON_MAX);
	__type(key, __u32);
	__type(value, struct fips_counter);
} tc_stats SEC(".maps");

/* Ethernet, the largest IPv4 header, UDP: what the program may read. */
#define HEADROOM (14 + 60 + 8)

static __always_inline int count(struct __sk_buff *skb, enum fips_tc_dir d, enum fips_tc_reason r)
{
	__u32 key = (__u32)d * TC_REASON_MAX + (__u32)r;
	struct fips_counter *c = bpf_map_lookup_elem(&tc_stats, &key);

	if (c) {
		c->packets++;
		c->bytes += skb->len;
	}
	return TC_ACT_UNSPEC;
}

static __always_inline int fips_port(const struct fips_tc_config *cfg, __u16 port)
{
	if (port == 0)
		return 0;
#pragma unroll
	for (int i = 0; i < FIPS_MAX_PORTS; i++)
		if (cfg->ports[i] == port)
			return 1;
	return 0;
}

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for one 16-bit word. */
static __always_inline __u16 csum_replace2(__u16 check, __u16 old, __u16 new)
{
	__u32 sum = (__u16)~check + (__u16)~old + (__u32) new;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static __always_inline int fips_tc(struct __sk_buff *skb, enum fips_tc_dir dir)
{
	struct fips_tc_config *cfg;
	struct udphdr *udp;
	struct ethhdr *eth;
	void *data, *end;
	__u32 zero = 0;
	__u8 ecn;

	cfg = bpf_map_lookup_elem(&tc_config, &zero);
	if (!cfg || !cfg->enabled)
		return count(skb, dir, TC_REASON_DISABLED);

	/* Headers the stack built or received sit in the linear part; pull
	 * them in when a driver left them paged. */
	if (skb->data_end - skb->data < HEADROOM && skb->len > skb->data_end - skb->data)
		bpf_skb_pull_data(skb, skb->len < HEADROOM ? skb->len : HEADROOM);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return count(skb, dir, TC_REASON_SHORT);

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 hl;

		if ((void *)(ip + 1) > end)
			return count(skb, dir, TC_REASON_SHORT);
		if ((ip->ver_ihl >> 4) != 4 || (ip->ver_ihl & 0xf) < 5)
			return count(skb, dir, TC_REASON_NOT_UDP);
		if (ip->protocol != IPPROTO_UDP)
			return count(skb, dir, TC_REASON_NOT_UDP);
		if (ip->frag_off & bpf_htons(IP_MF | IP_OFFMASK))
			return count(skb, dir, TC_REASON_FRAGMENT);
		hl = (ip->ver_ihl & 0xf) * 4;
		udp = (void *)ip + hl;
		if ((void *)(udp + 1) > end)
			return count(skb, dir, TC_REASON_SHORT);
		if (!fips_port(cfg, bpf_ntohs(dir == TC_DIR_EGRESS ? udp->source : udp->dest)))
			return count(skb, dir, TC_REASON_OTHER_PORT);
		ecn = ip->tos & ECN_MASK;
		if (dir == TC_DIR_EGRESS) {
			__u16 old, new;

			if (!skb->sk)
				return count(skb, dir, TC_REASON_FORWARDED);
			if (ecn != ECN_NOT_ECT)
				return count(skb, dir, TC_REASON_ECN_KEPT);
			old = (__u16)ip->ver_ihl << 8 | ip->tos;
			ip->tos |= ECN_ECT0;
			new = (__u16)ip->ver_ihl << 8 | ip->tos;
			ip->check = bpf_htons(csum_replace2(bpf_ntohs(ip->check), old, new));
			return count(skb, dir, TC_REASON_MARKED);
		}
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u8 *tc;

		if ((void *)(ip6 + 1) > end)
			return count(skb, dir, TC_REASON_SHORT);
		if ((bpf_ntohl(ip6->ver_tc_flow) >> 28) != 6)
			return count(skb, dir, TC_REASON_NOT_UDP);
		if (ip6->nexthdr != IPPROTO_UDP) {
			switch (ip6->nexthdr) {
			case IPPROTO_HOPOPTS:
			case IPPROTO_ROUTING:
			case IPPROTO_FRAGMENT:
			case IPPROTO_DSTOPTS:
				return count(skb, dir, TC_REASON_FRAGMENT);
			}
			return count(skb, dir, TC_REASON_NOT_UDP);
		}
		udp = (void *)(ip6 + 1);
		if ((void *)(udp + 1) > end)
			return count(skb, dir, TC_REASON_SHORT);
		if (!fips_port(cfg, bpf_ntohs(dir == TC_DIR_EGRESS ? udp->source : udp->dest)))
			return count(skb, dir, TC_REASON_OTHER_PORT);
		/* Traffic class: the low nibble of byte 0, the high of byte 1;
		 * ECN is its low two bits, bits 4-5 of byte 1. No checksum. */
		tc = (__u8 *)ip6;
		ecn = (tc[1] >> 4) & ECN_MASK;
		if (dir == TC_DIR_EGRESS) {
			if (!skb->sk)
				return count(skb, dir, TC_REASON_FORWARDED);
			if (ecn != ECN_NOT_ECT)
				return count(skb, dir, TC_REASON_ECN_KEPT);
			tc[1] |= ECN_ECT0 << 4;
			return count(skb, dir, TC_REASON_MARKED);
		}
	} else {
		return count(skb, dir, TC_REASON_NOT_IP);
	}

	if (ecn == ECN_CE)
		return count(skb, dir, TC_REASON_CE);
	if (ecn == ECN_NOT_ECT)
		return count(skb, dir, TC_REASON_NOT_ECT);
	return count(skb, dir, TC_REASON_ECT);
}

SEC("tc")
int tc_fips_egress(struct __sk_buff *skb)
{
	return fips_tc(skb, TC_DIR_EGRESS);
}

SEC("tc")
int tc_fips_ingress(struct __sk_buff *skb)
{
	return fips_tc(skb, TC_DIR_INGRESS);
}
