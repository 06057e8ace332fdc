package bpf

// `make generate` (clang and llvm-strip from Debian: apt-get install clang
// llvm libbpf-dev) compiles xdp_fips.c and tc_fips.c against headers/
// only, then records the hashes of sources and objects that
// TestObjectsFresh checks.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux -target bpfel -go-package bpf -type fips_verdict -type fips_reason -type fips_config -type fips_link -type fips_addr -type fips_bucket -type fips_counter -type fips_xsk_key xdp xdp_fips.c -- -I./headers -O2 -g -Wall -Werror
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux -target bpfel -go-package bpf -type fips_tc_dir -type fips_tc_reason -type fips_tc_config -type fips_counter tc tc_fips.c -- -I./headers -O2 -g -Wall -Werror
//go:generate go run ./internal/srcsum/gensum xdp_bpfel.go xdp_bpfel.o tc_bpfel.go tc_bpfel.o
