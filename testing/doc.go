// Package testing is the root of fips-go's test infrastructure: the
// in-process mesh harness, the network-namespace harness, integration
// scenarios and benchmarks against the performance anchors. Nothing here is
// linked into the daemon.
package testing
