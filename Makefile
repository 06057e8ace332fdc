# fips-go build, test and maintenance targets. `make test` is what CI runs.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 30s
BIN         ?= bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.Version=$(VERSION)

# Packages that own mutable state shared between goroutines: run under -race.
RACE_PKGS   ?= ./control/...

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

## fuzz: run every fuzz target for FUZZTIME each (default 30s).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

## generate: regenerate generated code (bpf2go objects, when present).
generate:
	$(GO) generate ./...

clean:
	rm -rf $(BIN)
