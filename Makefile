# Two entry points, both self-contained on a fresh machine with Go:
#   make run   - build CoreDNS with healthroute and serve Corefile.example
#   make test  - install what the tests need, then run every test with the race detector
GO ?= go

.PHONY: run test deps build
run:
	$(GO) run ./cmd/coredns -conf Corefile.example

build:
	$(GO) build -o coredns ./cmd/coredns

deps:
	./scripts/test-deps

test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
