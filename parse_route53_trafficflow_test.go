package healthroute

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

// trafficFlowHandWritten is the routing of route53/testdata/trafficflow/ written by
// hand as the project's own alias tree, with names of its own for the inner rules:
// a failover to a weighted pool with a sorry page, a geolocation rule over a latency
// and a geoproximity rule, a multivalue rule and a single endpoint.
const trafficFlowHandWritten = `healthroute example.com {
	region eu-west-1 53.35 -6.26
	region eu-central-1 50.11 8.68
	region us-east-1 39.04 -77.49
	check web1 tcp 192.0.2.11:443
	check web2 tcp 192.0.2.12:443
	check dublin tcp 192.0.2.21:443
	check frankfurt tcp 192.0.2.22:443
	check virginia tcp 192.0.2.31:443
	check seattle tcp 192.0.2.33:443
	record static.example.com. simple {
		ttl 300
		A 192.0.2.200
	}
	record www.example.com. failover {
		primary alias pool.example.com.
		secondary A 198.51.100.99
		ttl 60
	}
	record pool.example.com. weighted {
		ttl 60
		weight 3 A 192.0.2.11 check web1
		weight 1 A 192.0.2.12 check web2
	}
	record geo.example.com. geolocation {
		ttl 300
		continent EU alias europe.example.com.
		country US alias states.example.com.
		subdivision US-WA A 192.0.2.33 check seattle
		default A 192.0.2.99
	}
	record europe.example.com. latency {
		ttl 300
		region eu-west-1 A 192.0.2.21 check dublin
		region eu-central-1 A 192.0.2.22 check frankfurt
	}
	record states.example.com. geoproximity {
		ttl 300
		region us-east-1 bias 10 A 192.0.2.31 check virginia
		coordinates 41.88 -87.63 bias -20 A 192.0.2.32
	}
	record mv.example.com. multivalue {
		ttl 30
		value A 203.0.113.1 check web1
		value A 203.0.113.2 check web2
		value A 203.0.113.3
	}
	record one.example.com. simple {
		ttl 120
		A 10.0.0.2
	}
}`

// trafficFlowInput reads route53/testdata/trafficflow/ as the command and the route53
// property read it.
func trafficFlowInput(t testing.TB) route53.Input {
	t.Helper()
	dir := "route53/testdata/trafficflow/"
	in, err := (&route53.Files{Records: dir + "records.json", HealthChecks: dir + "checks.json",
		TrafficPolicies: []string{dir + "failover.policy.json", "tp-geo=" + dir + "geo.document.json", dir + "versions.policy.json"},
		PolicyRecords:   dir + "instances.json"}).Load()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestTrafficFlowServed converts traffic policy documents in both format versions,
// serves the record tree, and checks that every policy record's name answers as the
// hand-written Corefile does, TTLs and ECS scope included, for clients in several
// places and as checks fail.
func TestTrafficFlowServed(t *testing.T) {
	res, err := route53.Convert(trafficFlowInput(t))
	if err != nil {
		t.Fatal(err)
	}
	imported, icfg := testResolver(t, "healthroute example.com {\n"+res.Corefile+"}")
	hand, hcfg := testResolver(t, trafficFlowHandWritten)
	first := func(uint64) uint64 { return 0 } // weighted: the first member by weight, on both sides
	imported.Rand, hand.Rand = first, first
	rename := strings.NewReplacer("web1", "hc-web-1", "web2", "hc-web-2", "dublin", "hc-dublin", "frankfurt", "hc-frankfurt",
		"virginia", "hc-virginia", "seattle", "hc-seattle")
	states := [][]string{nil, {"web1"}, {"web1", "web2"}, {"dublin"}, {"dublin", "frankfurt"}, {"virginia"}, {"seattle"},
		{"seattle", "virginia"}, {"web1", "web2", "dublin", "frankfurt", "virginia", "seattle"}}
	clients := []struct {
		name string
		loc  routing.ClientLocation
	}{
		{"dublin", routing.ClientLocation{Country: "IE", Continent: "EU", Lat: 53.3, Lon: -6.3, HasCoords: true}},
		{"munich", routing.ClientLocation{Country: "DE", Continent: "EU", Lat: 48.1, Lon: 11.6, HasCoords: true}},
		{"new york", routing.ClientLocation{Country: "US", Continent: "NA", Subdivisions: "NY", Lat: 40.7, Lon: -74.0, HasCoords: true}},
		{"denver", routing.ClientLocation{Country: "US", Continent: "NA", Subdivisions: "CO", Lat: 39.7, Lon: -105.0, HasCoords: true}},
		{"seattle", routing.ClientLocation{Country: "US", Continent: "NA", Subdivisions: "WA", Lat: 47.6, Lon: -122.3, HasCoords: true}},
		{"tokyo", routing.ClientLocation{Country: "JP", Continent: "AS", Lat: 35.7, Lon: 139.7, HasCoords: true}},
		{"unknown", routing.ClientLocation{}},
	}
	names := []string{"www", "geo", "mv", "one", "static", "nope"}
	for _, down := range states {
		hand.Publish(snapshot(hcfg, down...))
		var idown []string
		for _, d := range down {
			idown = append(idown, rename.Replace(d))
		}
		imported.Publish(snapshot(icfg, idown...))
		for _, cl := range clients {
			for _, n := range names {
				q := routing.Query{Name: n + ".example.com.", Type: dns.TypeA, Client: netip.MustParsePrefix("198.51.100.0/24"), Loc: cl.loc}
				g, w := route53Answer(resolveAnswer(imported, q)), route53Answer(resolveAnswer(hand, q))
				if g != w {
					t.Errorf("%v down, %s client, %s: imported answers\n%s\nhand-written\n%s", down, cl.name, n, g, w)
				}
			}
		}
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "left out 1 record set that a policy record made") {
		t.Errorf("warnings %q, want the zone's record set of policy record pi-www left out", res.Warnings)
	}
}

// TestTrafficFlowRoute53Property loads the same files through the route53 property
// (traffic_policy and policy_records lines) and answers as the hand-written Corefile;
// a document it cannot reproduce is refused naming the property's line and the rule.
func TestTrafficFlowRoute53Property(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs("route53/testdata/trafficflow/" + p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	block := `healthroute example.com {
	route53 {
		records ` + abs("records.json") + `
		health_checks ` + abs("checks.json") + `
		traffic_policy ` + abs("failover.policy.json") + `
		traffic_policy tp-geo=` + abs("geo.document.json") + `
		traffic_policy ` + abs("versions.policy.json") + `
		policy_records ` + abs("instances.json") + `
	}
}`
	cfg, err := route53Parse(t, block)
	if err != nil {
		t.Fatal(err)
	}
	loaded := newResolver(cfg)
	hand, hcfg := testResolver(t, trafficFlowHandWritten)
	first := func(uint64) uint64 { return 0 }
	loaded.Rand, hand.Rand = first, first
	loaded.Publish(snapshot(cfg, "hc-web-1", "hc-dublin"))
	hand.Publish(snapshot(hcfg, "web1", "dublin"))
	for _, n := range []string{"www", "geo", "mv", "one", "static"} {
		for _, loc := range []routing.ClientLocation{{Country: "IE", Continent: "EU", Lat: 53.3, Lon: -6.3, HasCoords: true}, {Country: "US", Continent: "NA", Lat: 40, Lon: -80, HasCoords: true}} {
			q := routing.Query{Name: n + ".example.com.", Type: dns.TypeA, Client: testClient, Loc: loc}
			if g, w := route53Answer(resolveAnswer(loaded, q)), route53Answer(resolveAnswer(hand, q)); g != w {
				t.Errorf("%s from %s: loaded answers\n%s\nhand-written\n%s", n, loc.Country, g, w)
			}
		}
	}

	bad := coretest.WriteFile(t, "bad.json", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartRule":"top","Endpoints":{},"Rules":{"top":{"RuleType":"cidr"}}}`)
	records := coretest.WriteFile(t, "pi.json", `[{"Name":"www.example.com.","TTL":60,"TrafficPolicyId":"tp-bad","TrafficPolicyVersion":1}]`)
	_, err = route53Parse(t, "healthroute example.com {\n\troute53 {\n\t\trecords "+abs("records.json")+"\n\t\ttraffic_policy tp-bad="+bad+"\n\t\tpolicy_records "+records+"\n\t}\n}")
	if err == nil || !strings.Contains(err.Error(), "Testfile:2 - Error during parsing: route53:") || !strings.Contains(err.Error(), `rule "top": RuleType "cidr": not supported`) {
		t.Errorf("bad document: %v, want the route53 line and the rule", err)
	}
}
