package main

import (
	"strings"
	"testing"
)

// TestTrafficPoliciesWithoutRecords runs the command with a traffic policy and
// its policy records and no -records: it prints the policy record's tree in the
// zone given; without -zone it exits 1 saying the zone is unknown.
func TestTrafficPoliciesWithoutRecords(t *testing.T) {
	dir := "../../route53/testdata/trafficflow/aws/"
	pi := writeImportFile(t, "pi.json", `[{"Name":"mixed.example.com.","TTL":60,"TrafficPolicyId":"tp","TrafficPolicyVersion":1}]`)
	stdout, stderr, code := runImport(t, "-zone", "example.com.", "-traffic-policy", "tp="+dir+"combined.json", "-policy-records", pi)
	if code != 0 || !strings.Contains(stdout, "record mixed.example.com. geolocation {") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the combined example's tree", code, stdout, stderr)
	}
	if _, stderr, code := runImport(t, "-traffic-policy", "tp="+dir+"combined.json", "-policy-records", pi); code != 1 || !strings.Contains(stderr, "no zone given") {
		t.Errorf("without -zone: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := runImport(t, "-checks", dir+"checks.json"); code != 2 {
		t.Errorf("neither -records nor -traffic-policy: exit %d, want 2 (usage)", code)
	}
}
