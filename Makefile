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

## sim: the scale simulation (testing/sim, docs/scale.md): N nodes on
## TOPO (all, or a comma list of random, geometric, scalefree, grid,
## internet), each routing choice in ROUTING side by side. Results merge
## into docs/scale.json (other sizes are kept); docs/scale.md and the
## plots in docs/scale/ are rewritten. SIM_FLAGS passes more simreport
## flags (-horizon 120s, -churn=false, -pairs 300, -docs DIR). CPU-heavy,
## so it runs niced; the small mixed-rule sibling runs in make test.
N         ?= 1000
TOPO      ?= all
ROUTING   ?= upstream,fips-go,mixed
SIM_FLAGS ?=
.PHONY: sim
sim:
	SIM_COMMAND="make sim N=$(N) TOPO=$(TOPO) ROUTING=$(ROUTING)$(if $(SIM_FLAGS), SIM_FLAGS='$(SIM_FLAGS)')" \
	  nice -n 15 $(GO) run ./testing/sim/simreport -n $(N) -topo $(TOPO) -routing $(ROUTING) $(SIM_FLAGS)

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

## deb: the Debian package, out/deb/fips_<version>_<arch>.deb, built
## reproducibly from the current commit (docs/packaging.md). Sources are
## in cmd/fips/packaging/. nfpm runs as a pinned Go module.
## DEB_BINS lists the commands packaged into /usr/bin: add fipstop and
## fips-gateway here when they exist.
DEB_BINS      ?= fips fipsctl
DEB_GO        ?= go1.26.8
DEB_ARCH      ?= $(shell $(GO) env GOARCH)
DEB_OUT       ?= out/deb
NFPM          ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0
DEB_EPOCH     := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
DEB_DIRTY     := $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo .dirty)
DEB_VERSION   ?= 0.1.0~git$(shell TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd 2>/dev/null).$(shell git rev-parse --short=12 HEAD 2>/dev/null)$(DEB_DIRTY)-1
DEB_STAGE     := $(DEB_OUT)/stage
DEB_FILE      := $(DEB_OUT)/fips_$(DEB_VERSION)_$(DEB_ARCH).deb

.PHONY: deb
deb:
	@test "$$(GOTOOLCHAIN=$(DEB_GO) $(GO) env GOVERSION)" = "$(DEB_GO)" || \
	  { echo "make deb: needs toolchain $(DEB_GO)"; exit 1; }
	rm -rf $(DEB_STAGE) && mkdir -p $(DEB_STAGE)/bin
	for b in $(DEB_BINS); do \
	  GOTOOLCHAIN=$(DEB_GO) CGO_ENABLED=0 GOOS=linux GOARCH=$(DEB_ARCH) GOFLAGS= \
	    $(GO) build -trimpath -buildvcs=false \
	    -ldflags '-s -w -buildid= -X main.Version=$(DEB_VERSION)' -o $(DEB_STAGE)/bin/$$b ./cmd/$$b || exit 1; \
	done
	{ echo "fips ($(DEB_VERSION)) unstable; urgency=medium"; echo; \
	  echo "  * Built from fips-go commit $$(git rev-parse HEAD 2>/dev/null)."; echo; \
	  echo " -- fips-go developers <fips-go@users.noreply.github.com>  $$(LC_ALL=C date -u -R -d @$(DEB_EPOCH))"; \
	} | gzip -9n > $(DEB_STAGE)/changelog.Debian.gz
	mkdir -p $(DEB_STAGE)/man
	for m in cmd/fips/packaging/man/*.1; do gzip -9n < $$m > $(DEB_STAGE)/man/$${m##*/}.gz; done
	rm -f $(DEB_OUT)/fips_*.deb
	STAGE=$(DEB_STAGE) DEB_VERSION=$(DEB_VERSION) DEB_ARCH=$(DEB_ARCH) SOURCE_DATE_EPOCH=$(DEB_EPOCH) \
	  $(NFPM) package -f cmd/fips/packaging/nfpm.yaml -p deb -t $(DEB_FILE)
	@sha256sum $(DEB_FILE)
