/* SPDX-License-Identifier: MIT */
/*
 * common.h: the few kernel UAPI types and constants xdp_fips.c and
 * tc_fips.c need,
 * written out so the build depends on no system kernel headers. Values are
 * the stable UAPI ones from linux/bpf.h, linux/if_ether.h, linux/in.h,
 * linux/ip.h, linux/ipv6.h, linux/udp.h and linux/pkt_cls.h.
 */
#ifndef __FIPS_COMMON_H
#define __FIPS_COMMON_H

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef signed short __s16;
typedef unsigned int __u32;
typedef signed int __s32;
typedef unsigned long long __u64;
typedef signed long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u16 __sum16;
typedef __u32 __wsum;

enum bpf_map_type {
	BPF_MAP_TYPE_UNSPEC = 0,
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_XSKMAP = 17,
};

/* map_flags */
#define BPF_F_NO_PREALLOC (1U << 0)

/* bpf_map_update_elem flags */
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2

enum xdp_action {
	XDP_ABORTED = 0,
	XDP_DROP,
	XDP_PASS,
	XDP_TX,
	XDP_REDIRECT,
};

struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
	__u32 egress_ifindex;
};

struct bpf_sock;

/* The leading fields of struct __sk_buff, up to sk (the context of tc
 * programs; the verifier checks accesses by offset: sk is at 168). */
struct __sk_buff {
	__u32 len;
	__u32 pkt_type;
	__u32 mark;
	__u32 queue_mapping;
	__u32 protocol;
	__u32 vlan_present;
	__u32 vlan_tci;
	__u32 vlan_proto;
	__u32 priority;
	__u32 ingress_ifindex;
	__u32 ifindex;
	__u32 tc_index;
	__u32 cb[5];
	__u32 hash;
	__u32 tc_classid;
	__u32 data;
	__u32 data_end;
	__u32 napi_id;
	__u32 family;
	__u32 remote_ip4;
	__u32 local_ip4;
	__u32 remote_ip6[4];
	__u32 local_ip6[4];
	__u32 remote_port;
	__u32 local_port;
	__u32 data_meta;
	__u64 flow_keys; /* a pointer in the kernel's layout; not read here */
	__u64 tstamp;
	__u32 wire_len;
	__u32 gso_segs;
	struct bpf_sock *sk __attribute__((aligned(8))); /* NULL: no socket (forwarded) */
};
_Static_assert(__builtin_offsetof(struct __sk_buff, sk) == 168, "struct __sk_buff: sk at 168 as in the kernel's uapi");

/* tc verdicts: TC_ACT_UNSPEC is also tcx's TCX_NEXT (run the next program,
 * then the stack). */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_OK 0

#define ETH_ALEN 6
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

struct ethhdr {
	__u8 h_dest[ETH_ALEN];
	__u8 h_source[ETH_ALEN];
	__be16 h_proto;
} __attribute__((packed));

#define IPPROTO_HOPOPTS 0
#define IPPROTO_UDP 17
#define IPPROTO_ROUTING 43
#define IPPROTO_FRAGMENT 44
#define IPPROTO_AH 51
#define IPPROTO_DSTOPTS 60
#define IPPROTO_MH 135

/* IPv4 header; version and IHL share the first byte (version high). */
struct iphdr {
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
};

#define IP_MF 0x2000
#define IP_OFFMASK 0x1fff

struct ipv6hdr {
	__be32 ver_tc_flow;
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	__u8 saddr[16];
	__u8 daddr[16];
};

struct udphdr {
	__be16 source;
	__be16 dest;
	__be16 len;
	__sum16 check;
};

#endif /* __FIPS_COMMON_H */
