# Entry points, each self-contained on a fresh machine with Go:
#   make run       - build CoreDNS with healthroute and serve Corefile.example
#   make test      - install what the tests need, then run every test with the race detector,
#                    one package at a time (the fleet's tests measure seconds at real timers,
#                    and test/ starts many CoreDNS processes; run together on two cores they
#                    slow each other past those bounds), then every fuzz target for
#                    FUZZTIME_SHORT
#   make fuzz      - run every fuzz target (func Fuzz* in any package) for FUZZTIME
#   make own-build - add healthroute to CoreDNS v1.15.0's own source, as README's Building
#                    section says, build it and check the plugin is in it
GO ?= go
FUZZTIME ?= 30s
FUZZTIME_SHORT ?= 5s

.PHONY: run test deps build fuzz own-build
run: build
	@echo "make run: serving Corefile.example on 127.0.0.1:1053 (status page http://127.0.0.1:8053/); Ctrl-C stops it"
	@./scripts/serve ./coredns -conf Corefile.example

# Every step that can be silent for long runs under scripts/progress: a line every 30 s
# while it runs, and for builds a count of the packages compiled (go build -v).
build:
	@echo "make: building CoreDNS (every plugin of its plugin.cfg) with healthroute into ./coredns; the first build downloads CoreDNS's modules and compiles about 800 packages (minutes on two cores), counted as it goes"
	@./scripts/progress -packages "make build" $(GO) build -v -o coredns ./cmd/coredns

deps:
	./scripts/test-deps

test: deps
	./scripts/progress "go vet ./..." $(GO) vet ./...
	GO=$(GO) ./scripts/test
	GO=$(GO) ./scripts/progress "fuzz" ./scripts/fuzz $(FUZZTIME_SHORT)

fuzz:
	GO=$(GO) ./scripts/fuzz $(FUZZTIME)

own-build:
	GO=$(GO) ./scripts/own-build
