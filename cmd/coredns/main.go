// Command coredns is CoreDNS v1.15.0 with its standard plugin set (every plugin of
// its plugin.cfg, kubernetes, loop and forward included) and healthroute, so the
// Corefile a Kubernetes cluster ships runs with a healthroute block added.
package main

import (
	"slices"

	"github.com/coredns/coredns/core/dnsserver" // the "dns" server type and its directives
	_ "github.com/coredns/coredns/core/plugin"  // every plugin of CoreDNS's plugin.cfg
	"github.com/coredns/coredns/coremain"

	_ "github.com/healthroute/healthroute"
)

// withHealthroute returns CoreDNS's directives (its plugin.cfg order) with
// healthroute just before file, where README's Building section puts it: after
// metadata/geoip (whose data it reads), rewrite, cache and dnssec (which see its
// answers) and transfer (which serves AXFR from file, auto and secondary), and
// before file, auto, secondary and forward (which its fallthrough reaches).
func withHealthroute(directives []string) []string {
	i := slices.Index(directives, "file")
	if i < 0 {
		panic("CoreDNS's directives have no file")
	}
	return slices.Insert(slices.Clone(directives), i, "healthroute")
}

func init() { dnsserver.Directives = withHealthroute(dnsserver.Directives) }

func main() { coremain.Run() }
