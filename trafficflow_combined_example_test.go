package healthroute

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/healthroute/healthroute/routing"
	"github.com/miekg/dns"
)

// awsCombinedHandWritten is the routing of AWS's failover, latency and geolocation
// example document (route53/testdata/trafficflow/aws/combined.json), written by
// hand: a geolocation record whose default is the S3 website and whose US answer
// follows a latency record over two failover records of load balancers.
const awsCombinedHandWritten = `healthroute example.com {
	region us-east-1 39.04 -77.49
	region us-west-1 37.77 -122.42
	record mixed.example.com. geolocation {
		default CNAME video.example.com.s3-website-us-east-1.amazonaws.com.
		country US alias region.example.com. evaluate_target_health
	}
	record region.example.com. latency {
		region us-east-1 alias east.example.com. evaluate_target_health
		region us-west-1 alias west.example.com. evaluate_target_health
	}
	record east.example.com. failover {
		primary CNAME elb-111111.us-east-1.elb.amazonaws.com.
		secondary CNAME elb-222222.us-east-1.elb.amazonaws.com.
	}
	record west.example.com. failover {
		primary CNAME elb-111111.us-west-1.elb.amazonaws.com.
		secondary CNAME elb-222222.us-west-1.elb.amazonaws.com.
	}
}`

// TestTrafficFlowAWSCombinedExampleServed loads AWS's failover, latency and
// geolocation example through a route53 property that gives only the traffic
// policy and its policy record (no records file), and checks that it answers as
// the hand-written tree does for clients in the US east and west and elsewhere.
func TestTrafficFlowAWSCombinedExampleServed(t *testing.T) {
	policy, err := filepath.Abs("route53/testdata/trafficflow/aws/combined.json")
	if err != nil {
		t.Fatal(err)
	}
	instances := filepath.Join(t.TempDir(), "instances.json")
	if err := os.WriteFile(instances, []byte(`[{"Name": "mixed.example.com.", "TTL": 60, "TrafficPolicyId": "tp-combined", "TrafficPolicyVersion": 1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := route53Parse(t, "healthroute {\nroute53 {\ntraffic_policy tp-combined="+policy+"\npolicy_records "+instances+"\n}\n}")
	if err != nil {
		t.Fatal(err)
	}
	imported := newResolver(cfg)
	hand, hcfg := testResolver(t, awsCombinedHandWritten)
	imported.Publish(snapshot(cfg))
	hand.Publish(snapshot(hcfg))
	clients := []routing.ClientLocation{
		{Country: "US", Continent: "NA", Lat: 40.7, Lon: -74.0, HasCoords: true},
		{Country: "US", Continent: "NA", Lat: 37.4, Lon: -122.1, HasCoords: true},
		{Country: "FR", Continent: "EU", Lat: 48.9, Lon: 2.35, HasCoords: true},
		{},
	}
	seen := map[string]bool{}
	for _, loc := range clients {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME} {
			q := routing.Query{Name: "mixed.example.com.", Type: qt, Client: netip.MustParsePrefix("198.51.100.0/24"), Loc: loc}
			g, w := route53Answer(resolveAnswer(imported, q)), route53Answer(resolveAnswer(hand, q))
			if g != w {
				t.Errorf("client in %q at %.1f,%.1f, %s: imported answers\n%s\nhand-written\n%s", loc.Country, loc.Lat, loc.Lon, dns.TypeToString[qt], g, w)
			}
			seen[g] = true
		}
	}
	if len(seen) < 3 {
		t.Errorf("%d distinct answers over the clients, want the S3 website and both coasts' load balancers: %v", len(seen), seen)
	}
}

// TestRoute53PropertyWithoutRecordsNeedsOneZone: without a records file the
// policy records' zone is the block's, so a block of two zones is refused, as
// is a route53 property with neither records nor traffic policies.
func TestRoute53PropertyWithoutRecordsNeedsOneZone(t *testing.T) {
	c := caddy.NewTestController("dns", "healthroute {\nroute53 {\ntraffic_policy tp=x.json\n}\n}")
	c.ServerBlockKeys = []string{"example.com.", "example.net."}
	if _, err := parse(c, nil); err == nil || !strings.Contains(err.Error(), "without 'records FILE' the block must have one zone") {
		t.Errorf("two zones, traffic policies only: %v", err)
	}
	if _, err := route53Parse(t, "healthroute {\nroute53 {\nhealth_checks x.json\n}\n}"); err == nil || !strings.Contains(err.Error(), "expected a block with 'records FILE' or 'traffic_policy FILE'") {
		t.Errorf("checks only: %v", err)
	}
}
