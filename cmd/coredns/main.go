// Command coredns is CoreDNS with the healthroute plugin and the plugins operators
// run beside it.
package main

import (
	"github.com/coredns/coredns/core/dnsserver" // the "dns" server type and its directives
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/auto"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/debug"
	_ "github.com/coredns/coredns/plugin/dnssec"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/geoip"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metadata"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/pprof"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/root"
	_ "github.com/coredns/coredns/plugin/secondary"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/transfer"
	_ "github.com/coredns/coredns/plugin/whoami"

	_ "github.com/healthroute/healthroute"
)

// directives is CoreDNS v1.15.0's plugin.cfg order for the plugins above, with
// healthroute just before file: after metadata/geoip (whose data it reads), cache and
// dnssec (which see its answers), transfer (which serves AXFR from file, auto and
// secondary), and before file, auto, secondary and forward (which its fallthrough
// reaches). plugin.cfg in the repository root carries the same place.
var directives = []string{
	"root",
	"metadata",
	"geoip",
	"reload",
	"bind",
	"debug",
	"ready",
	"health",
	"pprof",
	"prometheus",
	"errors",
	"log",
	"loadbalance",
	"rewrite",
	"cache",
	"dnssec",
	"template",
	"transfer",
	"hosts",
	"healthroute",
	"file",
	"auto",
	"secondary",
	"forward",
	"whoami",
}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
