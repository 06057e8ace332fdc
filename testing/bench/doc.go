// Package bench is fips-go's benchmark suite (`make bench`): it builds
// network-namespace topologies joined by veth — 2-node direct, 3-node
// transit (A—B—C, B the relay, no A–C link) and a 5-node line — and
// measures, in one run and side by side, the kernel forwarding the same
// topology without encryption (the limit), wireguard-go (a pair, or a
// relay chain with one device per tunnel and the kernel forwarding
// between them) and fips-go, with default settings and in each XDP
// dataplane mode over UDP, and on the 2- and 3-node topologies over
// Ethernet transports only (AF_PACKET, and AF_XDP receive and transmit;
// a row the daemon refuses says why in its notes), and upstream FIPS when
// given its binaries (BENCH_UPSTREAM). All of it runs on two underlays:
// the veths as created, which hand GSO super-packets across whole, and
// wire-like, every veth end with its segmentation and GRO offloads off
// so no frame above the MTU crosses (SetWire; TestWireUnderlay counts
// what crosses). Every figure is the median of N repetitions
// with its range; every fips-go figure is also shown as a ratio to
// wireguard-go measured in the same run, because on a shared 2-core VM
// absolute figures drift while ratios hold.
//
// Before measuring, each path is route-checked: traffic must move the
// counters of the intended relays (fips-go's forwarded packets, the
// relay's interface counters for the others). Everything a run creates
// carries the netns harness's per-run prefix and is removed on exit, on
// failure and on interrupt; leftovers of a killed run are swept at the
// start of the next.
//
// The measuring half needs Linux and root; the report half (statistics,
// Markdown, JSON) is portable and tested everywhere.
package bench
