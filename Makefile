# Entry points, each self-contained on a fresh machine with Go:
#   make run   - build CoreDNS with healthroute and serve Corefile.example
#   make test  - install what the tests need, then run every test with the race detector,
#                one package at a time (-p 1: the fleet's tests measure seconds at real
#                timers, and test/ starts many CoreDNS processes; run together on two
#                cores they slow each other past those bounds), then every fuzz target
#                for FUZZTIME_SHORT
#   make fuzz  - run every fuzz target (func Fuzz* in any package) for FUZZTIME
GO ?= go
FUZZTIME ?= 30s
FUZZTIME_SHORT ?= 5s

.PHONY: run test deps build fuzz
run:
	$(GO) run ./cmd/coredns -conf Corefile.example

build:
	$(GO) build -o coredns ./cmd/coredns

deps:
	./scripts/test-deps

test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -p 1 -timeout 20m ./...
	GO=$(GO) ./scripts/fuzz $(FUZZTIME_SHORT)

fuzz:
	GO=$(GO) ./scripts/fuzz $(FUZZTIME)
