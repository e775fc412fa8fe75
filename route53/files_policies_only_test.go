package route53

import (
	"strings"
	"testing"
)

// TestTrafficPoliciesNeedNoRecordsFile loads traffic policies and their policy
// records without a records file, converts them into the zone given, and refuses
// files that name nothing to load.
func TestTrafficPoliciesNeedNoRecordsFile(t *testing.T) {
	dir := "testdata/trafficflow/aws/"
	f := Files{HealthChecks: dir + "checks.json", TrafficPolicies: []string{"tp-example=" + dir + "combined.json"}, PolicyRecords: dir + "instances.json"}
	if p := f.Paths(); len(p) != 3 || p[0] != dir+"checks.json" {
		t.Errorf("paths %q, want the checks, policy and policy records files", p)
	}
	in, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	in.Zone = "example.com."
	in.PolicyRecords = []PolicyRecord{{Name: "mixed.example.com.", TTL: 60, TrafficPolicyId: "tp-example", TrafficPolicyVersion: 1}}
	res, err := Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Corefile, "record mixed.example.com. geolocation {") {
		t.Errorf("no record set of the policy record in\n%s", res.Corefile)
	}
	if _, err := (&Files{HealthChecks: dir + "checks.json"}).Load(); err == nil || !strings.Contains(err.Error(), "no records file and no traffic policy") {
		t.Errorf("checks alone: %v, want refused", err)
	}
}
