package healthroute

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

// awsExamplesHandWritten is the routing of three example documents of AWS's traffic
// policy document format reference (route53/testdata/trafficflow/aws/: geolocation,
// weighted, and failover between a load balancer and an S3 website), written by hand.
const awsExamplesHandWritten = `healthroute example.com {
	check hc1 tcp 192.0.2.101:80
	check hc2 tcp 192.0.2.102:80
	check hc3 tcp 192.0.2.103:80
	record geo.example.com. geolocation {
		ttl 60
		default A 192.0.2.1 check hc1
		country FR A 192.0.2.2 check hc2
		country BE A 192.0.2.2 check hc2
		country DE A 192.0.2.3 check hc3
	}
	record rr.example.com. weighted {
		ttl 60
		weight 3 A 192.0.2.1 check hc1
		weight 1 A 192.0.2.2 check hc2
		weight 1 A 192.0.2.3 check hc3
	}
	record www.example.com. failover {
		primary CNAME elb-111111.us-east-1.elb.amazonaws.com.
		secondary CNAME www.example.com.s3-website-us-east-1.amazonaws.com.
	}
}`

// TestTrafficFlowAWSExamplesServed converts AWS's example documents, bound by policy
// records, serves them, and checks that every name answers as the hand-written
// Corefile does for clients in several countries, as the examples' checks fail.
func TestTrafficFlowAWSExamplesServed(t *testing.T) {
	dir := "route53/testdata/trafficflow/aws/"
	f, err := os.Open(dir + "checks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := route53.Input{Zone: "example.com."}
	if in.HealthChecks, err = route53.ReadHealthChecks(f); err != nil {
		t.Fatal(err)
	}
	for id, name := range map[string]string{"geolocation": "geo", "weighted": "rr", "failover": "www"} {
		doc, err := os.ReadFile(dir + id + ".json")
		if err != nil {
			t.Fatal(err)
		}
		in.TrafficPolicies = append(in.TrafficPolicies, route53.TrafficPolicy{Id: id, Version: 1, Document: string(doc)})
		in.PolicyRecords = append(in.PolicyRecords, route53.PolicyRecord{Name: name + ".example.com.", TTL: 60, TrafficPolicyId: id, TrafficPolicyVersion: 1})
	}
	res, err := route53.Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	imported, icfg := testResolver(t, "healthroute example.com {\n"+res.Corefile+"}")
	hand, hcfg := testResolver(t, awsExamplesHandWritten)
	first := func(uint64) uint64 { return 0 } // weighted: the first member by weight, on both sides
	imported.Rand, hand.Rand = first, first
	ids := strings.NewReplacer("hc1", "11111111-1111-1111-1111-111111111111", "hc2", "22222222-2222-2222-2222-222222222222",
		"hc3", "33333333-3333-3333-3333-333333333333")
	states := [][]string{nil, {"hc1"}, {"hc2"}, {"hc3"}, {"hc1", "hc2"}, {"hc1", "hc2", "hc3"}}
	countries := []routing.ClientLocation{{Country: "FR", Continent: "EU"}, {Country: "BE", Continent: "EU"}, {Country: "DE", Continent: "EU"},
		{Country: "US", Continent: "NA"}, {}}
	for _, down := range states {
		hand.Publish(snapshot(hcfg, down...))
		idown := make([]string, len(down))
		for i, d := range down {
			idown[i] = ids.Replace(d)
		}
		imported.Publish(snapshot(icfg, idown...))
		for _, loc := range countries {
			for _, n := range []string{"geo", "rr", "www"} {
				for _, qt := range []uint16{dns.TypeA, dns.TypeCNAME} {
					q := routing.Query{Name: n + ".example.com.", Type: qt, Client: netip.MustParsePrefix("198.51.100.0/24"), Loc: loc}
					g, w := route53Answer(resolveAnswer(imported, q)), route53Answer(resolveAnswer(hand, q))
					if g != w {
						t.Errorf("%v down, client in %q, %s %s: imported answers\n%s\nhand-written\n%s", down, loc.Country, n, dns.TypeToString[qt], g, w)
					}
				}
			}
		}
	}
}
