# fips-go build, test and maintenance targets. `make test` is what CI runs.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 30s
BIN         ?= bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.Version=$(VERSION)

# go test's per-package limit: testing/netns ran 9 to 10 minutes on CI's
# 2 cores, 17 on the 2-vCPU development machine of 2026-12-02 beside
# testing/packaging. The private Tor network test (1 to 2.5 minutes,
# mostly waiting on Tor's bootstrap) is a package of its own,
# testing/netns/tornet, so that go test runs it beside testing/netns.
TEST_TIMEOUT ?= 25m

# Packages that own mutable state shared between goroutines: run under -race.
RACE_PKGS   ?= ./control/... ./fallback/... ./dataplane/...

# Packages whose tests need root (network namespaces, BPF programs, TUN
# devices, installing the .deb): without it they fail, never skip, so
# `make test` does not start as another user.
PRIV_PKGS   := bpf dataplane/afxdp dataplane/ethernet dataplane/tun dataplane/xdp testing/bench testing/netns testing/netns/tornet testing/packaging

# sudo replaces PATH with its secure_path, which lacks Go's usual home:
# take go from there (the recipes and the tests that run go too).
ifeq ($(shell command -v $(GO)),)
ifneq ($(wildcard /usr/local/go/bin/go),)
export PATH := $(PATH):/usr/local/go/bin
GO          := /usr/local/go/bin/go
endif
endif

.PHONY: all build test test-unprivileged need-root unit race lint fmt-check vet staticcheck cross fuzz generate clean
.PHONY: deps deps-test deps-unit deps-demo deps-bench deps-profile deps-interop

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## deps: install what make test, demo and bench need that is missing
## (Debian, Ubuntu; root). testing/deps.sh is the one list; the targets
## below call it for their own group, .ci/run before make test.
deps:
	@bash testing/deps.sh
deps-test deps-unit deps-demo deps-bench deps-profile deps-interop:
	@bash testing/deps.sh $(@:deps-%=%)

## test: everything CI checks, as root. Fuzz seed corpora run as part of
## `go test`. As another user it stops at once with one line naming the
## suites that need root; test-unprivileged runs the rest.
ifeq ($(shell id -u),0)
test: deps-test lint unit race
else
test: need-root
endif

# $(error) rather than echo and exit: one line, without make's own.
need-root:
	$(error make test needs root for the suites in $(PRIV_PKGS) (network namespaces, BPF, installing the .deb): sudo make test, or make test-unprivileged for the rest)

unit: deps-test
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

race: deps-test
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -race $(RACE_PKGS)

## test-unprivileged: make test less the packages in PRIV_PKGS, as any user.
MODULE      = $(shell $(GO) list -m)
unpriv      = $(filter-out $(addprefix $(MODULE)/,$(PRIV_PKGS)),$(shell $(GO) list $(1)))
test-unprivileged: deps-unit lint
	@echo "go test -count=1 ./... less $(PRIV_PKGS)"
	@$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(call unpriv,./...)
	@echo "go test -count=1 -race $(RACE_PKGS) less $(PRIV_PKGS)"
	@$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -race $(call unpriv,$(RACE_PKGS))
	@echo "make test-unprivileged: passed; not run (need root: sudo make test): $(PRIV_PKGS)"

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

## sim-bound: what the strictly-decreasing-tree-distance invariant allows
## on each topology, whatever the rule and the tree (testing/sim/bound.go,
## docs/stretch-bound.md): breadth-first trees from sampled roots at
## BOUND_N sizes, and a search for a better tree up to 1,000 nodes.
BOUND_N ?= 300,1000,10000
.PHONY: sim-bound
sim-bound:
	SIM_COMMAND="make sim-bound BOUND_N=$(BOUND_N)" \
	  nice -n 15 $(GO) run ./testing/sim/simreport -bounds -n $(BOUND_N) -topo all -search-max-n 1000

## demo: four daemons in network namespaces (Linux, root): links, tree,
## bloom filters, a probe, then dig, ping and iperf3 across the mesh by name.
.PHONY: demo bench
demo: deps-demo
	$(GO) run ./testing/demo

## bench: fips-go side by side with wireguard-go and the kernel on 2-, 3-
## and 5-node namespace meshes (Linux, root), over UDP and, on the 2- and
## 3-node ones, over Ethernet (AF_PACKET and AF_XDP): TCP 1 and 4 streams,
## UDP at 1 Gbit/s, ping idle and under load, CPU per GB, retransmits;
## medians of BENCH_REPS (3); all of it on two underlays, the veths as
## created and wire-like (offloads off: no frame above the MTU crosses;
## BENCH_UNDERLAYS=default or =wire runs one). Rewrites its section of
## docs/performance.md and docs/bench.json. BENCH_QUICK=1: transit only,
## 1 stream, 1 repetition, Ethernet on the socket path only, the wire
## underlay on five systems, into out/bench/quick.md (≤ 4 minutes).
## BENCH_UPSTREAM=/path: a folder with upstream FIPS's fips and fipsctl,
## measured as one more system with fips-go's default settings
## (docs/performance.md; not tried against upstream itself).
BENCH_QUICK ?=
BENCH_UPSTREAM ?=
bench: deps-bench
	BENCH_QUICK=$(BENCH_QUICK) BENCH_UPSTREAM="$(BENCH_UPSTREAM)" \
	  BENCH_COMMAND="make bench$(if $(BENCH_QUICK), BENCH_QUICK=$(BENCH_QUICK))$(if $(BENCH_UPSTREAM), BENCH_UPSTREAM=$(BENCH_UPSTREAM))" \
	  $(GO) run ./testing/bench/fipsbench

## bench-profile: where fips-go's daemons spend their CPU while one TCP
## stream crosses the 3-node line, for fips-go in userspace, xdp, afxdp
## and afxdp xsk on both underlays (perf record -a -g, samples counted by
## kind of work: AEAD, XDP and AF_XDP receive, sockets, TUN, scheduling,
## Go code), into out/bench/profile.md (Linux, root; ~3 minutes).
## PROFILE_SYSTEMS, BENCH_UNDERLAYS and PROFILE_SECONDS narrow it
## (testing/bench/fipsprof).
.PHONY: bench-profile
bench-profile: deps-profile
	$(GO) run ./testing/bench/fipsprof

## interop: fips-go and upstream side by side in network namespaces
## (Linux, root; docs/interop.md), one table row per scenario: every
## A–B–C line of the two, late joiners, a 10-node random mixed mesh
## probed between all ordered pairs, kill -9 restarts, rekeys under load,
## TCP links, the fips-go relay in each dataplane mode between upstream
## ends. FIPS_UPSTREAM is a folder with upstream's fips and fipsctl
## (jmcorgan/fips built with `cargo build --release`: target/release).
## Node logs go to out/interop/. Not part of `make test`. INTEROP_FLAGS
## passes -run REGEXP (some rows), -seed N (another mesh), -list.
FIPS_UPSTREAM ?=
INTEROP_FLAGS ?=
.PHONY: interop
interop:
	@if [ -z "$(FIPS_UPSTREAM)" ]; then $(GO) run ./testing/interop; exit 1; fi
	@bash testing/deps.sh interop
	FIPS_UPSTREAM="$(FIPS_UPSTREAM)" $(GO) run ./testing/interop $(INTEROP_FLAGS)

## Packages: every command under cmd/ (PKG_BINS: fips, fipsctl, and
## fipstop and fips-gateway once they exist there), built reproducibly from
## the current commit (docs/packaging.md) with the pinned toolchain PKG_GO.
## Sources are in cmd/fips/packaging/; nfpm runs as a pinned Go module and
## testing/packaging/mkpkg makes the man pages and the ZIP.
##   deb:     out/deb/fips_<version>_<arch>.deb
##   tarball: out/tarball/fips-<version>-linux-<arch>.tar.gz, with install.sh
##   zip:     out/zip/fips-<version>-windows-<arch>.zip
##   man:     out/man/<command>.1
PKG_BINS       = $(notdir $(shell $(GO) list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./cmd/...))
PKG_GO        ?= go1.26.8
PKG_EPOCH     := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
DEB_EPOCH     := $(PKG_EPOCH)
PKG_DIRTY     := $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo .dirty)
PKG_VERSION   ?= 0.1.0~git$(shell TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd 2>/dev/null).$(shell git rev-parse --short=12 HEAD 2>/dev/null)$(PKG_DIRTY)
MKPKG         ?= GOTOOLCHAIN=$(PKG_GO) $(GO) run ./testing/packaging/mkpkg
MAN_OUT       ?= out/man
HOST_ARCH     := $(shell $(GO) env GOHOSTARCH)
# mkpkg man runs the packaged binaries for --help when they are this
# machine's; otherwise it builds its own.
man-bins       = $(if $(filter $(HOST_ARCH),$(2)),-bin $(1))

# $(call pkg-build,GOOS,GOARCH,DIR,COMMANDS,VERSION,SUFFIX)
define pkg-build
	@test "$$(GOTOOLCHAIN=$(PKG_GO) $(GO) env GOVERSION)" = "$(PKG_GO)" || \
	  { echo "make $@: needs toolchain $(PKG_GO)"; exit 1; }
	for b in $(4); do \
	  GOTOOLCHAIN=$(PKG_GO) CGO_ENABLED=0 GOOS=$(1) GOARCH=$(2) GOFLAGS= \
	    $(GO) build -trimpath -buildvcs=false \
	    -ldflags '-s -w -buildid= -X main.Version=$(5)' -o $(3)/$$b$(6) ./cmd/$$b || exit 1; \
	done
endef

.PHONY: man
man:
	rm -rf $(MAN_OUT)
	$(MKPKG) man -o $(MAN_OUT) -version $(PKG_VERSION) -epoch $(PKG_EPOCH) $(PKG_BINS)

DEB_BINS      ?= $(PKG_BINS)
DEB_ARCH      ?= $(shell $(GO) env GOARCH)
DEB_OUT       ?= out/deb
NFPM          ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0
DEB_VERSION   ?= $(PKG_VERSION)-1
DEB_STAGE     := $(DEB_OUT)/stage
DEB_FILE      := $(DEB_OUT)/fips_$(DEB_VERSION)_$(DEB_ARCH).deb

.PHONY: deb
deb:
	rm -rf $(DEB_STAGE) && mkdir -p $(DEB_STAGE)/bin
	$(call pkg-build,linux,$(DEB_ARCH),$(DEB_STAGE)/bin,$(DEB_BINS),$(DEB_VERSION),)
	{ echo "fips ($(DEB_VERSION)) unstable; urgency=medium"; echo; \
	  echo "  * Built from fips-go commit $$(git rev-parse HEAD 2>/dev/null)."; echo; \
	  echo " -- fips-go developers <fips-go@users.noreply.github.com>  $$(LC_ALL=C date -u -R -d @$(DEB_EPOCH))"; \
	} | gzip -9n > $(DEB_STAGE)/changelog.Debian.gz
	$(MKPKG) man -o $(DEB_STAGE)/man -version $(DEB_VERSION) -epoch $(DEB_EPOCH) \
	  $(call man-bins,$(DEB_STAGE)/bin,$(DEB_ARCH)) $(DEB_BINS)
	for m in $(DEB_STAGE)/man/*.1; do gzip -9n $$m; done
	mkdir -p $(DEB_STAGE)/completion
	GOTOOLCHAIN=$(PKG_GO) $(GO) run ./cmd/fipsctl completion bash > $(DEB_STAGE)/completion/fipsctl
	GOTOOLCHAIN=$(PKG_GO) $(GO) run ./cmd/fipsctl completion zsh > $(DEB_STAGE)/completion/_fipsctl
	rm -f $(DEB_OUT)/fips_*.deb
	STAGE=$(DEB_STAGE) DEB_VERSION=$(DEB_VERSION) DEB_ARCH=$(DEB_ARCH) SOURCE_DATE_EPOCH=$(DEB_EPOCH) \
	  $(NFPM) package -f cmd/fips/packaging/nfpm.yaml -p deb -t $(DEB_FILE)
	@sha256sum $(DEB_FILE)

TAR_BINS      ?= $(PKG_BINS)
TAR_ARCH      ?= $(shell $(GO) env GOARCH)
TAR_OUT       ?= out/tarball
TAR_NAME      := fips-$(PKG_VERSION)-linux-$(TAR_ARCH)
TAR_STAGE     := $(TAR_OUT)/stage/$(TAR_NAME)
TAR_FILE      := $(TAR_OUT)/$(TAR_NAME).tar.gz
PKG_SRC       := cmd/fips/packaging

.PHONY: tarball
tarball:
	rm -rf $(TAR_OUT)/stage && mkdir -p $(TAR_STAGE)/bin $(TAR_STAGE)/systemd $(TAR_STAGE)/etc $(TAR_STAGE)/lib
	$(call pkg-build,linux,$(TAR_ARCH),$(TAR_STAGE)/bin,$(TAR_BINS),$(PKG_VERSION),)
	$(MKPKG) man -o $(TAR_STAGE)/man -version $(PKG_VERSION) -epoch $(PKG_EPOCH) \
	  $(call man-bins,$(TAR_STAGE)/bin,$(TAR_ARCH)) $(TAR_BINS)
	cp $(PKG_SRC)/systemd/fips.service $(PKG_SRC)/systemd/fips-dns.service $(PKG_SRC)/systemd/fips-firewall.service \
	  $(PKG_SRC)/systemd/fips-gateway.service \
	  $(PKG_SRC)/systemd/fips.tmpfiles $(TAR_STAGE)/systemd/
	cp $(PKG_SRC)/etc/fips.yaml $(PKG_SRC)/etc/hosts $(PKG_SRC)/etc/fips.nft $(TAR_STAGE)/etc/
	cp $(PKG_SRC)/dns/fips-dns-setup $(PKG_SRC)/dns/fips-dns-teardown $(TAR_STAGE)/lib/
	cp $(PKG_SRC)/tarball/install.sh $(PKG_SRC)/tarball/uninstall.sh $(PKG_SRC)/tarball/README.install.md $(TAR_STAGE)/
	cp $(PKG_SRC)/debian/copyright $(TAR_STAGE)/COPYRIGHT
	find $(TAR_STAGE) -type d -exec chmod 0755 {} + && find $(TAR_STAGE) -type f -exec chmod 0644 {} +
	chmod 0755 $(TAR_STAGE)/bin/* $(TAR_STAGE)/lib/* $(TAR_STAGE)/install.sh $(TAR_STAGE)/uninstall.sh
	rm -f $(TAR_OUT)/fips-*.tar.gz
	LC_ALL=C tar --format=gnu --sort=name --mtime=@$(PKG_EPOCH) --owner=0 --group=0 --numeric-owner \
	  -C $(TAR_OUT)/stage -cf - $(TAR_NAME) | gzip -9n > $(TAR_FILE)
	@sha256sum $(TAR_FILE)

## zip: the Windows ZIP, out/zip/fips-<version>-windows-<arch>.zip: the
## .exe of every command that runs on Windows (not fips-gateway, which
## drives nftables), fips.yaml, hosts and README.txt.
ZIP_BINS      ?= $(filter-out fips-gateway,$(PKG_BINS))
ZIP_ARCH      ?= amd64
ZIP_OUT       ?= out/zip
ZIP_STAGE     := $(ZIP_OUT)/stage
ZIP_FILE      := $(ZIP_OUT)/fips-$(PKG_VERSION)-windows-$(ZIP_ARCH).zip

.PHONY: zip
zip:
	rm -rf $(ZIP_STAGE) && mkdir -p $(ZIP_STAGE)
	$(call pkg-build,windows,$(ZIP_ARCH),$(ZIP_STAGE),$(ZIP_BINS),$(PKG_VERSION),.exe)
	cp $(PKG_SRC)/etc/fips.yaml $(PKG_SRC)/etc/hosts $(ZIP_STAGE)/
	sed -e 's/@VERSION@/$(PKG_VERSION)/g' -e 's/@ARCH@/$(ZIP_ARCH)/g' -e 's/$$/\r/' $(PKG_SRC)/windows/README.txt > $(ZIP_STAGE)/README.txt
	rm -f $(ZIP_OUT)/fips-*.zip
	$(MKPKG) zip -o $(ZIP_FILE) -C $(ZIP_STAGE) -epoch $(PKG_EPOCH)
	@sha256sum $(ZIP_FILE)
