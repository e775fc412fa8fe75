package healthroute

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/routing"
)

// ask resolves name/A for a client prefix and location and returns the answer values.
func ask(r *routing.Resolver, name, client string, loc routing.ClientLocation) (string, routing.Answer) {
	ans := resolveAnswer(r, routing.Query{Name: name, Type: dns.TypeA, Client: netip.MustParsePrefix(client), Loc: loc})
	return strings.Join(rrValues(ans.RRs), ","), ans
}

const latencyCSV = `client_cidr,region,milliseconds
192.0.2.0/24,us-east-1,10
192.0.2.0/24,eu-west-1,80
192.0.2.0/24,ap-southeast-2,200
198.51.100.0/24,eu-west-1,5
198.51.100.0/24,us-east-1,90
198.51.100.0/24,ap-southeast-2,300
198.51.100.128/25,ap-southeast-2,1
2001:db8::/32,ap-southeast-2,3
2001:db8::/32,us-east-1,30
`

// TestLatency covers docs/routing.md#latency: ranking by table, distance or order; next-best
// when unhealthy; lowest latency when all are.
func TestLatency(t *testing.T) {
	table := coretest.WriteFile(t, "latency.csv", latencyCSV)
	records := `
		region us-east-1 38.9 -77.0
		region eu-west-1 53.3 -6.3
		region ap-southeast-2 -33.9 151.2
		record lat.example.org. latency {
			region us-east-1      A 192.0.2.1 check c1
			region eu-west-1      A 192.0.2.2 check c2
			region ap-southeast-2 A 192.0.2.3 check c3
		}
	}`
	withTable := "healthroute {\nlatency_table " + table + checks + records
	without := "healthroute {" + checks + records
	dublin := routing.ClientLocation{Lat: 53.35, Lon: -6.26, HasCoords: true}
	tests := []struct {
		name   string
		block  string
		client string
		loc    routing.ClientLocation
		down   []string
		want   string
	}{
		{"table: us client", withTable, "192.0.2.7/32", routing.ClientLocation{}, nil, "192.0.2.1"},
		{"table: eu client", withTable, "198.51.100.7/32", routing.ClientLocation{}, nil, "192.0.2.2"},
		{"table: longest prefix row wins", withTable, "198.51.100.200/32", routing.ClientLocation{}, nil, "192.0.2.3"},
		{"table: ECS /24 prefix", withTable, "198.51.100.0/24", routing.ClientLocation{}, nil, "192.0.2.2"},
		{"table: a /16 query matches no /24 row: coordinates", withTable, "198.51.0.0/16", dublin, nil, "192.0.2.2"},
		{"table: IPv6 client", withTable, "2001:db8:1::/48", routing.ClientLocation{}, nil, "192.0.2.3"},
		{"table: unhealthy best -> next best", withTable, "192.0.2.7/32", routing.ClientLocation{}, []string{"c1"}, "192.0.2.2"},
		{"table: two down -> third", withTable, "192.0.2.7/32", routing.ClientLocation{}, []string{"c1", "c2"}, "192.0.2.3"},
		{"table: all unhealthy -> lowest latency", withTable, "198.51.100.7/32", routing.ClientLocation{}, []string{"c1", "c2", "c3"}, "192.0.2.2"},
		{"coordinates: Dublin -> eu-west-1", without, "203.0.113.1/32", dublin, nil, "192.0.2.2"},
		{"coordinates: Sydney -> ap-southeast-2", without, "203.0.113.1/32", routing.ClientLocation{Lat: -33.8, Lon: 151, HasCoords: true}, nil, "192.0.2.3"},
		{"coordinates: next closest when unhealthy", without, "203.0.113.1/32", dublin, []string{"c2"}, "192.0.2.1"},
		{"no table, no location: listing order", without, "203.0.113.1/32", routing.ClientLocation{}, nil, "192.0.2.1"},
		{"listing order, first unhealthy", without, "203.0.113.1/32", routing.ClientLocation{}, []string{"c1"}, "192.0.2.2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, tc.block)
			r.Publish(snapshot(cfg, tc.down...))
			got, ans := ask(r, "lat.example.org.", tc.client, tc.loc)
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			want := uint8(netip.MustParsePrefix(tc.client).Bits()) // regions have coordinates: the client's location counts
			if strings.HasPrefix(tc.client, "198.51.") && want < 25 {
				want = 25 // the 198.51.100.128/25 row lies inside the client's prefix
			}
			if ans.Scope != want {
				t.Errorf("ECS scope %d, want %d", ans.Scope, want)
			}
		})
	}
}

// TestLatencyTableReload checks that a changed latency_table file is picked up.
func TestLatencyTableReload(t *testing.T) {
	table := coretest.WriteFile(t, "latency.csv", "192.0.2.0/24,a,10\n192.0.2.0/24,b,20\n")
	r, _ := testResolver(t, "healthroute {\nlatency_table "+table+`
		record lat.example.org. latency {
			region a A 192.0.2.1
			region b A 192.0.2.2
		}
	}`)
	if got, _ := ask(r, "lat.example.org.", "192.0.2.9/32", routing.ClientLocation{}); got != "192.0.2.1" {
		t.Fatalf("before: got %s, want 192.0.2.1", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { watchLatencyTable(ctx, r, table, watch.DefaultLimit, 10*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	if err := os.WriteFile(table, []byte("192.0.2.0/24,a,50\n192.0.2.0/24,b,20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got string
	waitUntil(t, 5*time.Second, "the changed table is picked up",
		func() bool {
			got, _ = ask(r, "lat.example.org.", "192.0.2.9/32", routing.ClientLocation{})
			return got == "192.0.2.2"
		},
		func() string { return "last answer " + got })
}

// TestGeolocation covers docs/routing.md#geolocation: the smallest applicable region, falling
// back to larger ones, the smallest when all are unhealthy, NODATA when none applies.
func TestGeolocation(t *testing.T) {
	block := func(withDefault bool) string {
		def := ""
		if withDefault {
			def = "default A 192.0.2.99 check c4"
		}
		return `healthroute {` + checks + `
			check c5 tcp 127.0.0.1:5
			record geo.example.org. geolocation {
				subdivision US-CA A 192.0.2.1 check c1
				country US        A 192.0.2.2 check c2
				continent NA      A 192.0.2.3 check c3
				country DE        A 192.0.2.4
				continent EU      A 192.0.2.5 check c5
				` + def + `
			}
		}`
	}
	ca := routing.ClientLocation{Country: "US", Continent: "NA", Subdivisions: "CA"}
	tests := []struct {
		name       string
		noDefault  bool
		loc        routing.ClientLocation
		down       []string
		want       string
		wantNoData bool
	}{
		{"subdivision", false, ca, nil, "192.0.2.1", false},
		{"country", false, routing.ClientLocation{Country: "US", Continent: "NA", Subdivisions: "NY"}, nil, "192.0.2.2", false},
		{"continent", false, routing.ClientLocation{Country: "CA", Continent: "NA"}, nil, "192.0.2.3", false},
		{"continent from the country table", false, routing.ClientLocation{Country: "FR"}, nil, "192.0.2.5", false},
		{"country beats continent", false, routing.ClientLocation{Country: "DE", Continent: "EU"}, nil, "192.0.2.4", false},
		{"default", false, routing.ClientLocation{Country: "JP", Continent: "AS"}, nil, "192.0.2.99", false},
		{"unknown location: default", false, routing.ClientLocation{}, nil, "192.0.2.99", false},
		{"subdivision down: country", false, ca, []string{"c1"}, "192.0.2.2", false},
		{"subdivision and country down: continent", false, ca, []string{"c1", "c2"}, "192.0.2.3", false},
		{"all three down: default", false, ca, []string{"c1", "c2", "c3"}, "192.0.2.99", false},
		{"all applicable down: the smallest", false, ca, []string{"c1", "c2", "c3", "c4"}, "192.0.2.1", false},
		{"records of other places never apply", false, routing.ClientLocation{Country: "FR", Continent: "EU"}, []string{"c5", "c4"}, "192.0.2.5", false},
		{"no default, nothing applies: NODATA", true, routing.ClientLocation{Country: "JP", Continent: "AS"}, nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, block(!tc.noDefault))
			r.Publish(snapshot(cfg, tc.down...))
			got, ans := ask(r, "geo.example.org.", "192.0.2.200/32", tc.loc)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if tc.wantNoData && (ans.Rcode != dns.RcodeSuccess || len(ans.Ns) != 1) {
				t.Errorf("want NOERROR with the SOA (NODATA), got rcode %d ns %v", ans.Rcode, ans.Ns)
			}
		})
	}
}

// TestGeoproximity covers docs/routing.md#geoproximity, with the bias examples.
func TestGeoproximity(t *testing.T) {
	// On the equator one degree of longitude is about 111.19 km.
	origin := routing.ClientLocation{Lat: 0, Lon: 0, HasCoords: true}
	tests := []struct {
		name    string
		members string
		loc     routing.ClientLocation
		down    []string
		want    string
	}{
		{"closest", `coordinates 0 0.9 A 192.0.2.1 check c1
			coordinates 0 1.35 A 192.0.2.2 check c2`, origin, nil, "192.0.2.1"},
		{"150 km with bias +50 beats 100 km", `coordinates 0 0.9 A 192.0.2.1 check c1
			coordinates 0 1.35 bias 50 A 192.0.2.2 check c2`, origin, nil, "192.0.2.2"},
		{"bias -50 doubles: 60 km becomes 120 km and loses to 100 km", `coordinates 0 0.9 A 192.0.2.1 check c1
			coordinates 0 0.54 bias -50 A 192.0.2.2 check c2`, origin, nil, "192.0.2.1"},
		{"region coordinates", `region far A 192.0.2.1 check c1
			region near A 192.0.2.2 check c2`, origin, nil, "192.0.2.2"},
		{"unhealthy: next closest", `coordinates 0 0.9 A 192.0.2.1 check c1
			coordinates 0 1.35 A 192.0.2.2 check c2
			coordinates 0 5 A 192.0.2.3 check c3`, origin, []string{"c1"}, "192.0.2.2"},
		{"all unhealthy: closest", `coordinates 0 0.9 A 192.0.2.1 check c1
			coordinates 0 1.35 A 192.0.2.2 check c2`, origin, []string{"c1", "c2"}, "192.0.2.1"},
		{"unknown location: first listed healthy", `coordinates 0 5 A 192.0.2.1 check c1
			coordinates 0 1 A 192.0.2.2 check c2`, routing.ClientLocation{}, []string{"c1"}, "192.0.2.2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, `healthroute {`+checks+`
				region far 10 10
				region near 0 1
				record prox.example.org. geoproximity {
					`+tc.members+`
				}
			}`)
			r.Publish(snapshot(cfg, tc.down...))
			if got, _ := ask(r, "prox.example.org.", "192.0.2.200/32", tc.loc); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestIPBased covers docs/routing.md#ip.
func TestIPBased(t *testing.T) {
	block := func(def string) string {
		return `healthroute {` + checks + `
			record ip.example.org. ip {
				cidr 192.0.0.0/16,203.0.113.0/24 A 192.0.2.1 check c1
				cidr 192.0.2.0/24 A 192.0.2.2 check c2
				cidr 2001:db8::/32 A 192.0.2.3
				` + def + `
			}
		}`
	}
	withDefault := block("default A 192.0.2.99 check c4")
	tests := []struct {
		name   string
		block  string
		client string
		down   []string
		want   string
	}{
		{"match", withDefault, "192.0.5.5/32", nil, "192.0.2.1"},
		{"second block of a member", withDefault, "203.0.113.9/32", nil, "192.0.2.1"},
		{"longest prefix wins", withDefault, "192.0.2.200/32", nil, "192.0.2.2"},
		{"ECS /24 matches a /24 block", withDefault, "192.0.2.0/24", nil, "192.0.2.2"},
		{"ECS /24 matches the enclosing /16", withDefault, "192.0.7.0/24", nil, "192.0.2.1"},
		{"a /16 query does not match a /24 block: default", withDefault, "203.0.0.0/16", nil, "192.0.2.99"},
		{"IPv6 /48 query matches a /32 block", withDefault, "2001:db8:0:1234::/48", nil, "192.0.2.3"},
		{"IPv6 /24 query does not match a /32 block", withDefault, "2001:d00::/24", nil, "192.0.2.99"},
		{"no match: default", withDefault, "198.51.100.1/32", nil, "192.0.2.99"},
		{"matched unhealthy: default", withDefault, "192.0.5.5/32", []string{"c1"}, "192.0.2.99"},
		{"matched and default unhealthy: matched", withDefault, "192.0.5.5/32", []string{"c1", "c4"}, "192.0.2.1"},
		{"no match, no default: NODATA", block(""), "198.51.100.1/32", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, tc.block)
			r.Publish(snapshot(cfg, tc.down...))
			got, ans := ask(r, "ip.example.org.", tc.client, routing.ClientLocation{})
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if ans.Rcode != dns.RcodeSuccess {
				t.Errorf("rcode %s, want NOERROR", dns.RcodeToString[ans.Rcode])
			}
		})
	}
}

// TestETHIntoClientGroups covers docs/routing.md#evaluate-target-health: evaluate target health into a
// geolocation or IP group is judged for this query's client.
func TestETHIntoClientGroups(t *testing.T) {
	r, cfg := testResolver(t, `healthroute {`+checks+`
		record www.example.org. failover {
			primary   alias geo.example.org.
			secondary alias net.example.org.
		}
		record geo.example.org. geolocation {
			country US A 192.0.2.1 check c1
			country DE A 192.0.2.2
		}
		record net.example.org. ip {
			cidr 198.51.100.0/24 A 198.51.100.1 check c2
			default A 203.0.113.1
		}
		record top.example.org. weighted {
			weight 10 alias geo.example.org.
			weight 10 A 203.0.113.50
		}
	}`)
	us, de, jp := routing.ClientLocation{Country: "US"}, routing.ClientLocation{Country: "DE"}, routing.ClientLocation{Country: "JP"}
	tests := []struct {
		name   string
		qname  string
		client string
		loc    routing.ClientLocation
		down   []string
		want   string
	}{
		{"US healthy: geo branch", "www.example.org.", "192.0.2.9/32", us, nil, "192.0.2.1"},
		{"US check down: backs out to the IP branch, default", "www.example.org.", "192.0.2.9/32", us, []string{"c1"}, "203.0.113.1"},
		{"US down, a client of the other: DE still answers", "www.example.org.", "192.0.2.9/32", de, []string{"c1"}, "192.0.2.2"},
		{"JP: no record applies, backs out", "www.example.org.", "198.51.100.7/32", jp, nil, "198.51.100.1"},
		{"JP, IP match down: IP default", "www.example.org.", "198.51.100.7/32", jp, []string{"c2"}, "203.0.113.1"},
		{"weighted with ETH into geo: JP never gets the geo branch", "top.example.org.", "192.0.2.9/32", jp, nil, "203.0.113.50"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.Publish(snapshot(cfg, tc.down...))
			for range 50 {
				if got, _ := ask(r, tc.qname, tc.client, tc.loc); got != tc.want {
					t.Fatalf("got %s, want %s", got, tc.want)
				}
			}
		})
	}
	// A static answer has scope 0, a client-dependent one the client's prefix length.
	r2, _ := testResolver(t, treeBlock)
	if _, ans := ask(r2, "www.example.org.", "192.0.2.0/24", routing.ClientLocation{}); ans.Scope != 0 {
		t.Errorf("failover/weighted answer has scope %d, want 0", ans.Scope)
	}
}

// BenchmarkResolveLatencyTree: latency (10,000-prefix table) -> failover -> weighted,
// with ECS, as in the bench plan's tree (d).
func BenchmarkResolveLatencyTree(b *testing.B) {
	var csv strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&csv, "10.%d.%d.0/24,us,%d\n10.%d.%d.0/24,eu,%d\n", i/256, i%256, 10+i%50, i/256, i%256, 30)
	}
	table := coretest.WriteFile(b, "lat.csv", csv.String())
	r, cfg := testResolver(b, "healthroute {\nlatency_table "+table+checks+`
		record www.example.org. latency {
			region us alias us.example.org.
			region eu alias eu.example.org.
		}
		record us.example.org. failover {
			primary alias us-pool.example.org.
			secondary A 192.0.2.100
		}
		record us-pool.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 10 A 192.0.2.2 check c2
			weight 10 A 192.0.2.3 check c3
		}
		record eu.example.org. weighted {
			weight 10 A 198.51.100.1 check c4
		}
	}`)
	r.Publish(snapshot(cfg, "c1"))
	r.Rand = nil
	q := routing.Query{Name: "www.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("10.3.7.0/24")}
	b.ReportAllocs()
	for b.Loop() {
		if len(resolveAnswer(r, q).RRs) != 1 {
			b.Fatal("no answer")
		}
	}
}

// BenchmarkResolveIP: an ip group of 10,000 prefixes.
func BenchmarkResolveIP(b *testing.B) {
	var members strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&members, "cidr 10.%d.%d.0/24 A 192.0.%d.%d\n", i/256, i%256, i/256, i%256)
	}
	r, _ := testResolver(b, `healthroute {
		record ip.example.org. ip {
			`+members.String()+`
			default A 192.0.2.1
		}
	}`)
	r.Rand = nil
	q := routing.Query{Name: "ip.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("10.20.30.40/32")}
	b.ReportAllocs()
	for b.Loop() {
		if len(resolveAnswer(r, q).RRs) != 1 {
			b.Fatal("no answer")
		}
	}
}
