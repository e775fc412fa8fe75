package main

import (
	"os"
	"strings"
	"testing"
)

// TestTrafficPolicyFlags runs the command on route53/testdata/trafficflow/: it prints
// the record tree of every policy record, as the package's golden file holds it, and
// a document it cannot reproduce exits 1 naming the rule, printing nothing.
func TestTrafficPolicyFlags(t *testing.T) {
	dir := "../../route53/testdata/trafficflow/"
	stdout, stderr, code := runImport(t, "-records", dir+"records.json", "-checks", dir+"checks.json",
		"-traffic-policy", dir+"failover.policy.json", "-traffic-policy", "tp-geo="+dir+"geo.document.json",
		"-traffic-policy", dir+"versions.policy.json", "-policy-records", dir+"instances.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden, err := os.ReadFile(dir + "converted.golden")
	if err != nil {
		t.Fatal(err)
	}
	want, warnings, _ := strings.Cut(string(golden), "-- warnings --\n")
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	for _, w := range strings.Split(strings.TrimSpace(warnings), "\n") {
		if !strings.Contains(stderr, "healthroute-import: warning: "+w+"\n") {
			t.Errorf("stderr %q lacks the warning %q", stderr, w)
		}
	}

	bad := writeImportFile(t, "bad.json", `{"AWSPolicyFormatVersion":"2023-05-09","RecordType":"A","StartRule":"top",
		"Endpoints":{"e":{"Type":"value","Value":"192.0.2.1"}},
		"Rules":{"top":{"RuleType":"failover","Primary":{"EndpointReference":"e"}}}}`)
	pi := writeImportFile(t, "pi.json", `{"TrafficPolicyInstances":[{"Name":"www.example.com.","TTL":60,"TrafficPolicyId":"tp","TrafficPolicyVersion":1}]}`)
	stdout, stderr, code = runImport(t, "-records", dir+"records.json", "-traffic-policy", "tp="+bad, "-policy-records", pi)
	if code != 1 || stdout != "" || !strings.Contains(stderr, `policy record www.example.com. (traffic policy tp:1), rule "top": a failover rule needs a Primary and a Secondary`) {
		t.Errorf("bad document: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestAZAffinityImport: the command prints AZ-affinity record sets and the new health
// check fields as the package's golden file holds them.
func TestAZAffinityImport(t *testing.T) {
	dir := "../../route53/testdata/"
	stdout, stderr, code := runImport(t, "-records", dir+"azaffinity.records.json", "-checks", dir+"azaffinity.checks.json")
	golden, err := os.ReadFile(dir + "azaffinity.golden")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := strings.Cut(string(golden), "-- warnings --\n")
	if code != 0 || stdout != want || !strings.Contains(stderr, "kept as `regions`: in a fleet only members whose region") {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, stdout, want, stderr)
	}
}
