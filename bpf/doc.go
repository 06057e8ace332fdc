// Package bpf holds the eBPF C programs (XDP steering and rate limiting,
// TC ECN marking) with their bpf2go-generated Go bindings and objects, which
// are committed so that building fips-go never needs clang. `make generate`
// regenerates them.
package bpf
