# fips-go build, test and maintenance targets. `make test` is what CI runs.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 30s
BIN         ?= bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.Version=$(VERSION)

# Packages that own mutable state shared between goroutines: run under -race.
RACE_PKGS   ?= ./control/... ./fallback/...

.PHONY: all build test unit race lint fmt-check vet staticcheck cross fuzz generate clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## test: everything CI checks. Fuzz seed corpora run as part of `go test`.
test: lint unit race

unit:
	$(GO) test -count=1 ./...

race:
	$(GO) test -count=1 -race $(RACE_PKGS)

lint: fmt-check vet staticcheck cross

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

# The portable fallback must keep building for the other platforms.
cross:
	GOOS=darwin  $(GO) build ./...
	GOOS=windows $(GO) build ./...
	GOOS=darwin  $(GO) vet ./...
	GOOS=windows $(GO) vet ./...

## fuzz: run every fuzz target for FUZZTIME (default 30s) each.
## FUZZ_JOBS targets run at once (default 1), each with FUZZ_WORKERS workers
## (default: GOMAXPROCS). Logs go to $(FUZZLOG)/; a failure stops the run.
FUZZ_JOBS    ?= 1
FUZZ_WORKERS ?= 0
FUZZLOG      ?= out/fuzz
fuzz:
	@mkdir -p $(FUZZLOG)
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do echo "$$pkg $$t"; done; \
	done | xargs -P $(FUZZ_JOBS) -L 1 sh -c '\
	  log=$(FUZZLOG)/$$(echo $$0 | tr / _).$$1.log; \
	  par=""; [ "$(FUZZ_WORKERS)" != 0 ] && par="-parallel=$(FUZZ_WORKERS)"; \
	  if $(GO) test -run="^$$" -fuzz="^$$1$$" -fuzztime=$(FUZZTIME) $$par $$0 > $$log 2>&1; \
	  then echo "ok   $$0 $$1 $$(grep -o "execs: [0-9]*" $$log | tail -1)"; \
	  else echo "FAIL $$0 $$1 (see $$log)"; exit 255; fi'

## generate: regenerate generated code: bpf/xdp_bpfel.{go,o} from
## bpf/xdp_fips.c with clang (apt-get install clang llvm libbpf-dev), then
## bpf/sources.sha256, which TestObjectsFresh checks. Commit the objects.
generate:
	@command -v clang >/dev/null 2>&1 && command -v llvm-strip >/dev/null 2>&1 || \
	  { echo "make generate needs clang and llvm-strip: apt-get install -y clang llvm libbpf-dev"; exit 1; }
	$(GO) generate ./...

clean:
	rm -rf $(BIN)

## demo: four daemons in network namespaces (Linux, root): links, tree,
## bloom filters, a probe, then dig, ping and iperf3 across the mesh by name.
.PHONY: demo bench
demo:
	@need=""; for c in ip:iproute2 ping:iputils-ping dig:dnsutils iperf3:iperf3 nft:nftables; do \
	  command -v $${c%%:*} >/dev/null 2>&1 || need="$$need $${c#*:}"; done; \
	  if [ -n "$$need" ]; then apt-get update -qq && apt-get install -y -qq $$need; fi
	$(GO) run ./testing/demo

## bench: fips-go side by side with wireguard-go and the kernel on 2-, 3-
## and 5-node namespace meshes (Linux, root): TCP 1 and 4 streams, UDP at
## 1 Gbit/s, ping idle and under load, CPU per GB, retransmits; medians of
## BENCH_REPS (3). Rewrites its section of docs/performance.md and
## docs/bench.json. BENCH_QUICK=1: transit only, 1 stream, 1 repetition,
## into out/bench/quick.md (≤ 3 minutes).
BENCH_QUICK ?=
bench:
	@need=""; for c in ip:iproute2 ping:iputils-ping dig:dnsutils iperf3:iperf3 nft:nftables; do \
	  command -v $${c%%:*} >/dev/null 2>&1 || need="$$need $${c#*:}"; done; \
	  if [ -n "$$need" ]; then apt-get update -qq && apt-get install -y -qq $$need; fi
	BENCH_QUICK=$(BENCH_QUICK) BENCH_COMMAND="make bench$(if $(BENCH_QUICK), BENCH_QUICK=$(BENCH_QUICK))" \
	  $(GO) run ./testing/bench/fipsbench
