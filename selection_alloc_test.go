package healthroute

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// selectionAllocBlock has one record set per routing policy, plus alias trees with evaluate
// target health into static and client-dependent groups.
const selectionAllocBlock = `healthroute {` + checks + `
	region us-east-1 38.9 -77.0
	region eu-west-1 53.3 -6.3
	record simple.example.org. simple {
		A 192.0.2.1 192.0.2.2
	}
	record weighted.example.org. weighted {
		weight 10 A 192.0.2.1 check c1
		weight 20 A 192.0.2.2 check c2
		weight 0  A 192.0.2.3
	}
	record failover.example.org. failover {
		primary   A 192.0.2.1 check c1
		secondary A 192.0.2.2
	}
	record multi.example.org. multivalue {
		value A 192.0.2.1 check c1
		value A 192.0.2.2 check c2
		value A 192.0.2.3 check c3
		value A 192.0.2.4
	}
	record latency.example.org. latency {
		region us-east-1 A 192.0.2.1 check c1
		region eu-west-1 A 192.0.2.2 check c2
	}
	record geo.example.org. geolocation {
		country US A 192.0.2.1 check c1
		continent EU A 192.0.2.2
		default A 192.0.2.3
	}
	record prox.example.org. geoproximity {
		region us-east-1 A 192.0.2.1 check c1
		coordinates 0 1 bias 20 A 192.0.2.2 check c2
	}
	record ip.example.org. ip {
		cidr 198.51.100.0/24 A 198.51.100.1 check c2
		default A 192.0.2.3
	}
	record tree.example.org. failover {
		primary   alias geo.example.org.
		secondary alias pool.example.org.
	}
	record pool.example.org. weighted {
		weight 10 alias latency.example.org.
		weight 10 A 192.0.2.9 check c4
	}
}`

// TestSelectionAllocatesNothing holds README's claim that selection itself allocates
// nothing: every policy's path through Resolve, healthy, partly failed, and in its
// last resort, with and without a client location. The one allocation is a
// multivalue answer's record slice, which differs per query.
func TestSelectionAllocatesNothing(t *testing.T) {
	r, cfg := testResolver(t, selectionAllocBlock)
	r.Rand = nil // the production random source
	us := clientLocation{Country: "US", Continent: "NA", Lat: 40.7, Lon: -74, HasCoords: true}
	ie := clientLocation{Country: "IE", Continent: "EU", Lat: 53.3, Lon: -6.3, HasCoords: true}
	client := netip.MustParsePrefix("198.51.100.0/24")
	other := netip.MustParsePrefix("203.0.113.7/32")
	for _, down := range [][]string{nil, {"c1"}, {"c1", "c2", "c3", "c4"}} {
		r.Publish(snapshot(cfg, down...))
		for _, name := range []string{"simple", "weighted", "failover", "multi", "latency", "geo", "prox", "ip", "tree", "pool"} {
			for _, q := range []query{
				{Name: name + ".example.org.", Type: dns.TypeA, Client: client, Loc: us},
				{Name: name + ".example.org.", Type: dns.TypeA, Client: other, Loc: ie},
				{Name: name + ".example.org.", Type: dns.TypeA, Client: other},
				{Name: name + ".example.org.", Type: dns.TypeAAAA, Client: client, Loc: us},
			} {
				if len(r.Resolve(q).RRs) == 0 && q.Type == dns.TypeA {
					t.Fatalf("down %v: %s from %s: no answer", down, q.Name, q.Client)
				}
				want := 0.0
				if name == "multi" && q.Type == dns.TypeA {
					want = 1 // the answer itself: a random subset in random order, built per query
				}
				if n := testing.AllocsPerRun(50, func() { r.Resolve(q) }); n != want {
					t.Errorf("down %v: %s %s from %s (%+v): %v allocations per query, want %v",
						down, q.Name, dns.TypeToString[q.Type], q.Client, q.Loc, n, want)
				}
			}
		}
	}
}
