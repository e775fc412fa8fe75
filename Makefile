# Two entry points, both self-contained on a fresh machine with Go:
#   make run   - build CoreDNS with healthroute and serve Corefile.example
#   make test  - install what the tests need, then run every test with the race detector
#                and every fuzz target briefly
#   make fuzz  - run every fuzz target of the module for FUZZTIME each (default 60s)
GO ?= go
FUZZTIME ?= 60s

.PHONY: run test deps build fuzz
run:
	$(GO) run ./cmd/coredns -conf Corefile.example

build:
	$(GO) build -o coredns ./cmd/coredns

deps:
	./scripts/test-deps

test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) fuzz FUZZTIME=5s

# go test -fuzz takes one target in one package at a time: list them all.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done
