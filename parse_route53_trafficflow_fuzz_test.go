package healthroute

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/route53"
)

// FuzzTrafficPolicyImportLoads: whatever traffic policy document the importer
// converts, the plugin loads the lines it prints; the importer refuses what the
// plugin would refuse (a CNAME beside addresses through aliases, coordinates that
// are not numbers), naming the rule, instead of printing it.
func FuzzTrafficPolicyImportLoads(f *testing.F) {
	seeds, _ := filepath.Glob("route53/testdata/trafficflow/aws/*.json")
	seeds = append(seeds, "route53/testdata/trafficflow/geo.document.json")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil && strings.Contains(string(b), "AWSPolicyFormatVersion") {
			f.Add(string(b))
		}
	}
	cf, err := os.Open("route53/testdata/trafficflow/aws/checks.json") // the checks the examples name
	if err != nil {
		f.Fatal(err)
	}
	checks, err := route53.ReadHealthChecks(cf)
	cf.Close()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		res, err := route53.Convert(route53.Input{Zone: "example.com.", HealthChecks: checks,
			TrafficPolicies: []route53.TrafficPolicy{{Id: "tp", Version: 1, Document: doc}},
			PolicyRecords:   []route53.PolicyRecord{{Name: "www.example.com.", TTL: 60, TrafficPolicyId: "tp", TrafficPolicyVersion: 1}}})
		if err != nil {
			return // refusals are FuzzTrafficPolicyDocument's
		}
		block := "healthroute example.com {\n" + res.Corefile + "}"
		c := caddy.NewTestController("dns", block)
		c.ServerBlockKeys = []string{"example.com."}
		if _, err := parse(c, nil); err != nil {
			t.Fatalf("converted, but the plugin refuses it: %v\n%s", err, block)
		}
	})
}
