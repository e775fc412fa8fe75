package healthroute

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// FuzzServeMetrics parses arbitrary Corefile text as a healthroute block and, when it
// parses, serves every name it defines (up to 20) through ServeDNS on one server, with
// every check healthy and then down, and scrapes the metrics: nothing may panic, and
// the scrape must succeed (the registry refuses a series reported twice, which two
// answer series numbered apart for one label set would be). Seeds: the multivalue,
// shared-id and cross-zone alias blocks below.
func FuzzServeMetrics(f *testing.F) {
	f.Add("healthroute {\nrecord www.example.org. simple {\nA 192.0.2.1\n}\n}")
	f.Add("healthroute {\ncheck c tcp 127.0.0.1:9\nrecord m.example.org. multivalue {\nvalue A 192.0.2.1 id multivalue check c\n}\nrecord m.example.org. weighted {\nweight 1 AAAA 2001:db8::1 id multivalue\n}\n}")
	f.Add("healthroute example.org. example.net. {\nrecord a.example.net. simple {\nalias b.example.org.\n}\nrecord b.example.org. weighted {\nweight 1 A 192.0.2.1 id x\nweight 1 AAAA 2001:db8::1 id x\n}\n}")
	f.Fuzz(func(t *testing.T, input string) {
		for _, special := range []string{"/dev", "/proc", "/sys"} {
			if strings.Contains(input, special) {
				t.Skip("reads a special file")
			}
		}
		c := caddy.NewTestController("dns", input)
		c.ServerBlockKeys = []string{"example.org."}
		cfg, err := parse(c, nil)
		if err != nil {
			return
		}
		h := newHandler(cfg, &registry{})
		h.Next = test.NextHandler(dns.RcodeNameError, nil)
		t.Cleanup(func() { shared.counting.drop(cfg) })
		server := "dns://fuzz"
		ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: server})
		ask := func() {
			for _, rs := range cfg.Records[:min(len(cfg.Records), 20)] {
				for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
					m := new(dns.Msg)
					m.SetQuestion(strings.Replace(rs.Name, "*", "x", 1), qt)
					h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), m)
				}
			}
		}
		ask()
		var down []string
		for n := range cfg.Checks {
			down = append(down, n)
		}
		h.resolver.Publish(snapshot(cfg, down...))
		ask()
		if _, err := prometheus.DefaultGatherer.Gather(); err != nil {
			t.Fatalf("scrape: %v", err)
		}
	})
}
