package healthroute

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/answers.golden from the current code")

// goldenBlock exercises every policy, several record types, aliases with and without
// evaluate target health, wildcards, a CNAME chase, a delegation and client-dependent
// groups, so that its answers pin the Resolver's behaviour as a whole.
const goldenBlock = `healthroute example.org {
	ttl 30
	soa ns1.example.org. hostmaster.example.org. 1 7200 1800 1209600 60
	ns ns1.example.org.
	region us-east-1 38.9 -77.0
	region eu-west-1 53.3 -6.3
	region ap-southeast-2 -33.9 151.2
	check a tcp 192.0.2.1:80
	check b tcp 192.0.2.2:80
	check c tcp 192.0.2.3:80
	check d tcp 192.0.2.4:80
	check calc calculated a b c {
		threshold 2
	}
	record ns1.example.org. simple {
		A 192.0.2.53
	}
	record simple.example.org. simple {
		A 192.0.2.10 192.0.2.11
		AAAA 2001:db8::10
		TXT "hello" "world"
		MX 10 mail.example.org. 20 simple.example.org.
	}
	record mail.example.org. weighted {
		weight 10 A 192.0.2.25 check a
		weight 10 A 192.0.2.26 check b
	}
	record weighted.example.org. weighted {
		weight 10 A 192.0.2.20 check a
		weight 30 A 192.0.2.21 check b
		weight 0 A 192.0.2.22 check c
	}
	record failover.example.org. failover {
		primary A 192.0.2.30 check a
		secondary A 192.0.2.31 check b
	}
	record multi.example.org. multivalue {
		value A 192.0.2.40 check a
		value A 192.0.2.41 check b
		value A 192.0.2.42 check c
		value A 192.0.2.43
	}
	record latency.example.org. latency {
		region us-east-1 A 192.0.2.50 check a
		region eu-west-1 A 192.0.2.51 check b
		region ap-southeast-2 A 192.0.2.52 check c
	}
	record geo.example.org. geolocation {
		country US A 192.0.2.60 check a
		subdivision US-CA A 192.0.2.61 check b
		continent EU A 192.0.2.62 check c
		default A 192.0.2.63 check d
	}
	record prox.example.org. geoproximity {
		region us-east-1 A 192.0.2.70 check a
		coordinates 48.9 2.3 bias 20 A 192.0.2.71 check b
		region ap-southeast-2 bias -10 A 192.0.2.72 check c
	}
	record ip.example.org. ip {
		cidr 192.0.2.0/24,2001:db8::/32 A 192.0.2.80 check a
		cidr 198.51.100.0/22 A 192.0.2.81 check b
		default A 192.0.2.82 check c
	}
	record tree.example.org. failover {
		primary alias east.example.org.
		secondary alias west.example.org.
	}
	record east.example.org. weighted {
		weight 10 A 192.0.2.90 check a
		weight 10 A 192.0.2.91 check b
	}
	record west.example.org. latency {
		region us-east-1 alias failover.example.org.
		region eu-west-1 alias geo.example.org. evaluate_target_health no
	}
	record calc.example.org. failover {
		primary A 192.0.2.95 check calc
		secondary A 192.0.2.96
	}
	record *.apps.example.org. simple {
		CNAME tree.example.org.
	}
	record chase.example.org. simple {
		CNAME simple.example.org.
	}
	record out.example.org. simple {
		CNAME www.example.net.
	}
	record sub.example.org. simple {
		NS ns.sub.example.org.
	}
	record ns.sub.example.org. simple {
		A 192.0.2.99
	}
	record srv.example.org. weighted {
		weight 1 SRV 10 5 443 mail.example.org. check a
		weight 1 SRV 20 5 443 simple.example.org. check b
	}
}`

// TestAnswersGolden answers a fixed set of queries, from several clients and locations,
// in several health states, with a seeded random source, and compares every answer
// byte for byte with testdata/answers.golden. A change that alters any answer fails
// here; when the change is meant, `go test -run TestAnswersGolden -update .` rewrites
// the file and the diff shows what changed.
func TestAnswersGolden(t *testing.T) {
	r, cfg := testResolver(t, goldenBlock)
	names := []string{"example.org.", "ns1.example.org.", "simple.example.org.", "mail.example.org.",
		"weighted.example.org.", "failover.example.org.", "multi.example.org.", "latency.example.org.",
		"geo.example.org.", "prox.example.org.", "ip.example.org.", "tree.example.org.",
		"east.example.org.", "west.example.org.", "calc.example.org.", "x.apps.example.org.",
		"chase.example.org.", "out.example.org.", "sub.example.org.", "deep.sub.example.org.",
		"srv.example.org.", "nope.example.org.", "apps.example.org."}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeMX, dns.TypeSRV, dns.TypeNS, dns.TypeSOA, dns.TypeDS}
	clients := []struct {
		prefix string
		loc    routing.ClientLocation
	}{
		{"192.0.2.7/32", routing.ClientLocation{Country: "US", Continent: "NA", Subdivisions: "CA", Lat: 37.4, Lon: -122.1, HasCoords: true}},
		{"198.51.100.0/24", routing.ClientLocation{Country: "IE", Continent: "EU", Lat: 53.3, Lon: -6.3, HasCoords: true}},
		{"203.0.113.9/32", routing.ClientLocation{Country: "AU", Lat: -33.8, Lon: 151.0, HasCoords: true}},
		{"2001:db8:1::/48", routing.ClientLocation{}},
		{"10.0.0.0/8", routing.ClientLocation{Country: "JP"}},
	}
	states := [][]string{nil, {"a"}, {"a", "b"}, {"a", "b", "c"}, {"a", "b", "c", "d"}, {"c", "d"}}
	var out strings.Builder
	for _, down := range states {
		r.Publish(snapshot(cfg, down...))
		fmt.Fprintf(&out, "## down %v\n", down)
		for _, n := range names {
			for _, qt := range types {
				prev := ""
				for _, c := range clients {
					// Three answers each, so that random choices show; a client that
					// gets the same answer as the client before is written as "same".
					var line string
					for range 3 {
						a := resolveAnswer(r, routing.Query{Name: n, Type: qt, Client: netip.MustParsePrefix(c.prefix), Loc: c.loc})
						line += " || " + goldenAnswer(a)
					}
					if line == prev {
						line = " same"
					} else {
						prev = line
					}
					fmt.Fprintf(&out, "%s %s %s:%s\n", n, dns.TypeToString[qt], c.prefix, line)
				}
			}
		}
	}
	const file = "testdata/answers.golden"
	if *updateGolden {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	got := strings.Split(out.String(), "\n")
	wl := strings.Split(string(want), "\n")
	if len(got) != len(wl) {
		t.Errorf("%d answer lines, %s has %d", len(got), file, len(wl))
	}
	diffs := 0
	for i := range min(len(got), len(wl)) {
		if got[i] != wl[i] {
			if diffs++; diffs <= 10 {
				t.Errorf("line %d:\n got  %s\n want %s", i+1, got[i], wl[i])
			}
		}
	}
	if diffs > 10 {
		t.Errorf("... and %d more lines differ", diffs-10)
	}
}

// goldenAnswer writes an answer with every field a client sees.
func goldenAnswer(a routing.Answer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rcode=%s scope=%d pass=%t referral=%t", dns.RcodeToString[a.Rcode], a.Scope, a.Pass, a.Referral)
	for _, sec := range []struct {
		name string
		rrs  []dns.RR
	}{{"an", a.RRs}, {"ns", a.Ns}, {"ex", a.Extra}} {
		for _, rr := range sec.rrs {
			fmt.Fprintf(&b, " | %s %s", sec.name, strings.Join(strings.Fields(rr.String()), " "))
		}
	}
	return b.String()
}
