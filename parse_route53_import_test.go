package healthroute

import (
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

// route53HandWritten is what an operator writes by hand for the zone of
// route53/testdata/tree.*.json: the same routing in Corefile order of their own, with
// their own check names and no set identifiers.
const route53HandWritten = `healthroute example.com {
	region us-east-1 39.04 -77.49
	region ap-southeast-2 -33.87 151.21
	check use1-a tcp 192.0.2.10:443
	check use1-b tcp 192.0.2.11:443
	check apse2 http http://192.0.2.20/health
	check geo-eu http http://192.0.2.30/
	record www.example.com. latency {
		region us-east-1      alias use1.example.com.
		region ap-southeast-2 alias apse2.example.com. evaluate_target_health no
	}
	record use1.example.com. weighted {
		weight 10 A 192.0.2.10 check use1-a
		weight 30 A 192.0.2.11 check use1-b
		weight 10 AAAA 2001:db8::10 check use1-a
	}
	record apse2.example.com. weighted {
		weight 10 A 192.0.2.20 check apse2
		weight 10 AAAA 2001:db8::20 check apse2
	}
	record api.example.com. failover {
		ttl 30
		primary   alias www.example.com.
		secondary A 198.51.100.20
	}
	record docs.example.com. simple {
		ttl 300
		CNAME www.example.com.
	}
	record office.example.com. ip {
		cidr 192.0.2.0/24,2001:db8::/32 A 192.0.2.100
		default A 198.51.100.100
	}
	record geo.example.com. geolocation {
		continent EU A 192.0.2.30 check geo-eu
		country DE A 192.0.2.31
		default A 192.0.2.32
	}
	record near.example.com. geoproximity {
		region us-east-1 A 192.0.2.40
		coordinates 50.11 8.68 bias 25 A 192.0.2.41
	}
	record mv.example.com. multivalue {
		value A 192.0.2.51 check use1-a
		value A 192.0.2.52 check use1-b
	}
	record *.apps.example.com. simple {
		A 192.0.2.60 192.0.2.61
	}
}`

// TestRoute53RoundTrip imports route53/testdata/tree.*.json, parses the printed lines
// as a healthroute block, and checks that every name answers every type exactly as
// the hand-written Corefile does, TTLs included, for clients in several places and
// several health states.
func TestRoute53RoundTrip(t *testing.T) {
	in := route53.Input{Zone: "example.com."}
	var err error
	read := func(name string, f func(*os.File) error) {
		fh, err := os.Open("route53/testdata/tree." + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if err := f(fh); err != nil {
			t.Fatal(err)
		}
	}
	read("records", func(f *os.File) error { in.RecordSets, err = route53.ReadRecordSets(f); return err })
	read("checks", func(f *os.File) error { in.HealthChecks, err = route53.ReadHealthChecks(f); return err })
	read("cidr", func(f *os.File) error {
		b, err := route53.ReadCIDRBlocks(f)
		in.CIDRBlocks = map[string][]route53.CidrBlock{"": b}
		return err
	})
	res, err := route53.Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	imported, icfg := testResolver(t, "healthroute example.com {\n"+res.Corefile+"}")
	hand, hcfg := testResolver(t, route53HandWritten)

	// Health states, by each side's check names.
	states := []struct {
		name           string
		imported, hand []string
	}{
		{name: "all healthy"},
		{"use1-a down", []string{"c-use1-a"}, []string{"use1-a"}},
		{"use1 down", []string{"c-use1-a", "c-use1-b"}, []string{"use1-a", "use1-b"}},
		{"apse2 down", []string{"c-apse2-a"}, []string{"apse2"}},
		{"everything down", []string{"c-use1-a", "c-use1-b", "c-apse2-a", "c-geo-eu"}, []string{"use1-a", "use1-b", "apse2", "geo-eu"}},
	}
	clients := []struct {
		name   string
		prefix string
		loc    routing.ClientLocation
	}{
		{"virginia", "198.51.100.7/32", routing.ClientLocation{Country: "US", Continent: "NA", Subdivisions: "VA", Lat: 38.9, Lon: -77.0, HasCoords: true}},
		{"sydney", "203.0.113.9/32", routing.ClientLocation{Country: "AU", Continent: "OC", Lat: -33.8, Lon: 151.0, HasCoords: true}},
		{"berlin", "203.0.113.77/32", routing.ClientLocation{Country: "DE", Continent: "EU", Lat: 52.5, Lon: 13.4, HasCoords: true}},
		{"paris", "203.0.113.78/32", routing.ClientLocation{Country: "FR", Continent: "EU", Lat: 48.86, Lon: 2.35, HasCoords: true}},
		{"office v4", "192.0.2.7/32", routing.ClientLocation{}},
		{"office v6 ECS", "2001:db8:5::/48", routing.ClientLocation{}},
		{"unknown", "100.64.0.1/32", routing.ClientLocation{}},
	}
	names := []string{"www", "api", "use1", "apse2", "docs", "office", "geo", "near", "mv", "x.apps", "apps", "nope"}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT}
	compared := 0
	for _, st := range states {
		imported.Publish(snapshot(icfg, st.imported...))
		hand.Publish(snapshot(hcfg, st.hand...))
		for _, cl := range clients {
			for _, n := range names {
				for _, qt := range types {
					q := routing.Query{Name: n + ".example.com.", Type: qt, Client: netip.MustParsePrefix(cl.prefix), Loc: cl.loc}
					got, want := resolveAnswer(imported, q), resolveAnswer(hand, q)
					g, w := route53Answer(got), route53Answer(want)
					if g != w {
						t.Errorf("%s, %s client, %s %s: imported answers\n%s\nhand-written\n%s", st.name, cl.name, n, dns.TypeToString[qt], g, w)
					}
					compared++
				}
			}
		}
	}
	if compared != len(states)*len(clients)*len(names)*len(types) {
		t.Fatalf("compared %d answers", compared)
	}
}

// route53Answer renders an answer's rcode, records and ECS scope for comparison.
func route53Answer(a routing.Answer) string {
	rrs := make([]string, len(a.RRs))
	for i, rr := range a.RRs {
		rrs[i] = rr.String()
	}
	slices.Sort(rrs)
	return dns.RcodeToString[a.Rcode] + " scope " + strconv.Itoa(int(a.Scope)) + "\n" + strings.Join(rrs, "\n")
}
