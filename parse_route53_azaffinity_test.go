package healthroute

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

// azImportHandWritten is what an operator writes by hand for the zone of
// route53/testdata/azaffinity.*.json, answering as Route 53 does: the calculated
// check with HealthThreshold 0 is no check at all, the one above its child count and
// the CloudWatch alarm with InsufficientDataHealthStatus Unhealthy (never any data
// here) are answered as always unhealthy, so their records are the healthy member.
const azImportHandWritten = `
	check az1 http http://192.0.2.1/health
	check zg tcp 192.0.2.2:443
	check reg https https://192.0.2.3/ {
		host svc.example.com
	}
	check part tcp 192.0.2.4:80
	record svc.example.com. azaffinity {
		ttl 60
		az use1-az1 A 192.0.2.1 check az1
		zone_group us-east-1-zg-1 A 192.0.2.2 check zg
		region us-east-1 A 192.0.2.3 check reg
		region eu-west-1 A 192.0.2.7
		partition aws A 192.0.2.4 check part
		global A 192.0.2.5
	}
	record app.example.com. azaffinity {
		ttl 30
		az use1-az2 alias svc.example.com.
		global A 198.51.100.9
	}
	record edge.example.com. simple {
		ttl 60
		A 192.0.2.11
	}
	record cw.example.com. simple {
		ttl 60
		A 192.0.2.22
	}
	record cw2.example.com. simple {
		ttl 60
		A 192.0.2.31
	}
`

// TestRoute53AZAffinityRoundTrip imports AZ-affinity record sets and health checks with
// the fields the importer carries since AZ affinity (Regions, MeasureLatency,
// HealthThreshold edge cases, InsufficientDataHealthStatus), serves the printed lines
// and compares every answer with the hand-written Corefile's, for replicas in several
// locations and clients placed by prefix, as checks fail one by one.
func TestRoute53AZAffinityRoundTrip(t *testing.T) {
	in := route53.Input{Zone: "example.com."}
	for _, f := range []string{"records", "checks"} {
		fh, err := os.Open("route53/testdata/azaffinity." + f + ".json")
		if err != nil {
			t.Fatal(err)
		}
		if f == "records" {
			in.RecordSets, err = route53.ReadRecordSets(fh)
		} else {
			in.HealthChecks, err = route53.ReadHealthChecks(fh)
		}
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := route53.Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	locations := []string{"location az use1-az1", "location az use1-az2", "location zone_group us-east-1-zg-1",
		"location region us-east-1", "location region eu-west-1", "location partition aws", ""}
	states := []struct{ imported, hand []string }{
		{}, {[]string{"hc-az1"}, []string{"az1"}}, {[]string{"hc-az1", "hc-zg"}, []string{"az1", "zg"}},
		{[]string{"hc-az1", "hc-zg", "hc-reg"}, []string{"az1", "zg", "reg"}},
		{[]string{"hc-az1", "hc-zg", "hc-reg", "hc-part"}, []string{"az1", "zg", "reg", "part"}},
	}
	clients := []string{"198.51.100.1/32", "10.2.0.0/24", "10.2.0.0/8", "2001:db8::/48"}
	names := []string{"svc", "app", "edge", "cw", "cw2"}
	for _, loc := range locations {
		head := "healthroute example.com {\n" + loc + "\nclient_location az use1-az2 10.2.0.0/16\n"
		imported, icfg := testResolver(t, head+res.Corefile+"}")
		hand, hcfg := testResolver(t, head+azImportHandWritten+"}")
		if got := icfg.Checks["hc-az1"].Regions; !slices.Equal(got, []string{"us-east-1", "eu-west-1", "ap-southeast-1"}) {
			t.Fatalf("hc-az1 regions %v, want Route 53's three", got)
		}
		for _, st := range states {
			imported.Publish(snapshot(icfg, st.imported...))
			hand.Publish(snapshot(hcfg, st.hand...))
			for _, c := range clients {
				for _, n := range names {
					q := routing.Query{Name: n + ".example.com.", Type: dns.TypeA, Client: netip.MustParsePrefix(c)}
					g, w := route53Answer(resolveAnswer(imported, q)), route53Answer(resolveAnswer(hand, q))
					if g != w {
						t.Errorf("%q, %v down, %s from %s: imported answers\n%s\nhand-written\n%s", loc, st.hand, n, c, g, w)
					}
				}
			}
		}
	}
	for _, w := range []string{"Regions us-east-1, eu-west-1, ap-southeast-1 kept as `regions`", "HealthThreshold 0: always healthy", "HealthThreshold 3 is more than its 2 children: always unhealthy",
		"hc-cw-unhealthy: a CLOUDWATCH_METRIC (CloudWatch alarm queue-depth in us-east-1) cannot be observed from here; imported as a disabled, inverted check, always unhealthy"} {
		if !strings.Contains(strings.Join(res.Warnings, "\n"), w) {
			t.Errorf("no warning %q in\n%s", w, strings.Join(res.Warnings, "\n"))
		}
	}
}

// TestRoute53AZAffinityProperty loads the AZ-affinity zone through the route53
// property beside the block's own location line, and answers as the hand-written
// Corefile with the same line.
func TestRoute53AZAffinityProperty(t *testing.T) {
	dir, err := filepath.Abs("route53/testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := route53Parse(t, "healthroute example.com {\n\tlocation zone_group us-east-1-zg-1\n\troute53 {\n\t\trecords "+
		dir+"/azaffinity.records.json\n\t\thealth_checks "+dir+"/azaffinity.checks.json\n\t}\n}")
	if err != nil {
		t.Fatal(err)
	}
	loaded := newResolver(cfg)
	hand, hcfg := testResolver(t, "healthroute example.com {\nlocation zone_group us-east-1-zg-1\n"+azImportHandWritten+"}")
	for _, down := range [][]string{nil, {"zg"}, {"zg", "reg"}, {"zg", "reg", "part"}} {
		var idown []string
		for _, d := range down {
			idown = append(idown, "hc-"+d)
		}
		loaded.Publish(snapshot(cfg, idown...))
		hand.Publish(snapshot(hcfg, down...))
		for _, n := range []string{"svc", "app", "edge", "cw", "cw2"} {
			q := routing.Query{Name: n + ".example.com.", Type: dns.TypeA, Client: testClient}
			if g, w := route53Answer(resolveAnswer(loaded, q)), route53Answer(resolveAnswer(hand, q)); g != w {
				t.Errorf("%v down, %s: loaded answers\n%s\nhand-written\n%s", down, n, g, w)
			}
		}
	}
}
