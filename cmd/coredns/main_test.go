package main

import (
	"slices"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
)

// TestDirectiveOrder: healthroute runs after the plugins that read or wrap its
// answers (metadata, geoip, rewrite, cache, dnssec, transfer) and just before the
// ones its fallthrough reaches (file, auto, secondary, forward).
func TestDirectiveOrder(t *testing.T) {
	at := func(name string) int {
		i := slices.Index(dnsserver.Directives, name)
		if i < 0 {
			t.Fatalf("%s is not in the directives", name)
		}
		return i
	}
	hr := at("healthroute")
	for _, before := range []string{"metadata", "geoip", "rewrite", "cache", "dnssec", "transfer", "hosts"} {
		if at(before) > hr {
			t.Errorf("%s comes after healthroute", before)
		}
	}
	for _, after := range []string{"file", "auto", "secondary", "forward", "loop"} {
		if at(after) < hr {
			t.Errorf("%s comes before healthroute", after)
		}
	}
	if dnsserver.Directives[hr+1] != "file" {
		t.Errorf("healthroute is followed by %s, want file", dnsserver.Directives[hr+1])
	}
}
