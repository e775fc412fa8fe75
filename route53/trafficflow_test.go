package route53

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestTrafficFlowGolden converts testdata/trafficflow/ (documents of both format
// versions, in each form the aws CLI prints them, and a bare one) and compares the
// text with converted.golden (go test -update rewrites it).
func TestTrafficFlowGolden(t *testing.T) {
	dir := "testdata/trafficflow/"
	in, err := (&Files{Records: dir + "records.json", HealthChecks: dir + "checks.json",
		TrafficPolicies: []string{dir + "failover.policy.json", "tp-geo=" + dir + "geo.document.json", dir + "versions.policy.json"},
		PolicyRecords:   dir + "instances.json"}).Load()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	got := golden(res)
	if *update {
		if err := os.WriteFile(dir+"converted.golden", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(dir + "converted.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from %sconverted.golden:\n%s", dir, got)
	}
}

// tfDoc is a document with one rule, for the error cases.
func tfDoc(rules string) string {
	return `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartRule":"top",
		"Endpoints":{"e1":{"Type":"value","Value":"192.0.2.1"},"e2":{"Type":"value","Value":"192.0.2.2"}},
		"Rules":{` + rules + `}}`
}

// TestTrafficFlowErrors: documents that are malformed or that healthroute cannot
// reproduce are refused, naming the policy record, the policy and the rule or
// endpoint at fault.
func TestTrafficFlowErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"malformed JSON", `{"AWSPolicyFormatVersion":"2015-10-01",`, `(traffic policy tp:1): document: unexpected EOF`},
		{"format version", `{"AWSPolicyFormatVersion":"2012-10-17","RecordType":"A","StartEndpoint":"e1","Endpoints":{"e1":{"Type":"value","Value":"192.0.2.1"}}}`,
			`AWSPolicyFormatVersion "2012-10-17", expected 2015-10-01 or 2023-05-09`},
		{"no start", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","Endpoints":{}}`, `expected one of StartRule and StartEndpoint`},
		{"start rule missing", tfDoc(`"other":{"RuleType":"failover","Primary":{"EndpointReference":"e1"},"Secondary":{"EndpointReference":"e2"}}`),
			`rule "top": StartRule names no rule of the document`},
		{"unknown rule type", tfDoc(`"top":{"RuleType":"cidr","Items":[{"EndpointReference":"e1"}]}`),
			`rule "top": RuleType "cidr": not supported`},
		{"unknown field in a rule", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1","Priority":"2"}]}`),
			`rule "top": json: unknown field "Priority"`},
		{"failover without secondary", tfDoc(`"top":{"RuleType":"failover","Primary":{"EndpointReference":"e1"}}`),
			`rule "top": a failover rule needs a Primary and a Secondary`},
		{"rule reference to nothing", tfDoc(`"top":{"RuleType":"failover","Primary":{"RuleReference":"gone"},"Secondary":{"EndpointReference":"e2"}}`),
			`rule "top": RuleReference "gone" names no rule of the document`},
		{"endpoint reference to nothing", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e9","Weight":"1"}]}`),
			`rule "top": EndpointReference "e9" names no endpoint of the document`},
		{"cycle", tfDoc(`"top":{"RuleType":"failover","Primary":{"RuleReference":"loop"},"Secondary":{"EndpointReference":"e2"}},
			"loop":{"RuleType":"weighted","Items":[{"RuleReference":"top","Weight":"1"}]}`),
			`rule "top": rules refer to each other in a cycle: top -> loop -> top`},
		{"multivalue to a rule", tfDoc(`"top":{"RuleType":"multivalue","Items":[{"RuleReference":"w"}]},
			"w":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1"}]}`),
			`rule "top": item 0: a multivalue rule routes to endpoints only, found rule "w"`},
		{"weight out of range", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"300"}]}`),
			`rule "top": record set www.example.com. A ("e1"): Weight 300, expected 0 to 255`},
		{"latency region unknown", tfDoc(`"top":{"RuleType":"latency","Regions":[{"Region":"moon-1","EndpointReference":"e1"}]}`),
			`rule "top": record set www.example.com. A ("e1"): region "moon-1": not an AWS region`},
		{"geoproximity local zone", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Region":"us-east-1-bos-1","EndpointReference":"e1"}]}`),
			`rule "top": item 0: Region "us-east-1-bos-1", expected aws:route53:REGION`},
		{"fields of another type", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1"}],"Regions":[{"Region":"us-east-1","EndpointReference":"e2"}]}`),
			`rule "top": a weighted rule with the fields of another rule type`},
		{"endpoint type", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"x","Endpoints":{"x":{"Type":"ec2-instance","Value":"i-1"}}}`,
			`endpoint "x": Type "ec2-instance": not supported`},
		{"unknown health check", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1","HealthCheck":"hc-none"}]}`),
			`rule "top": record set www.example.com. A ("e1"): health check hc-none is not among the health checks read`},
		{"geo subdivision without country", tfDoc(`"top":{"RuleType":"geo","Locations":[{"Subdivision":"WA","EndpointReference":"e1"}]}`),
			`rule "top": item 0: Subdivision WA without its country`},
		{"AWS resource with a type it cannot answer", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"MX","StartEndpoint":"cf","Endpoints":{"cf":{"Type":"cloudfront","Value":"d111.cloudfront.net"}}}`,
			`endpoint "cf": record set www.example.com. MX: alias to d111.cloudfront.net. outside the zone for type MX: not supported`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Zone: "example.com.",
				TrafficPolicies: []TrafficPolicy{{Id: "tp", Version: 1, Document: tc.doc}},
				PolicyRecords:   []PolicyRecord{{Name: "www.example.com.", TTL: 60, TrafficPolicyId: "tp", TrafficPolicyVersion: 1}}}
			_, err := Convert(in)
			var pe *PolicyError
			if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "policy record www.example.com. (traffic policy tp:1)") {
				t.Errorf("error %v, want a PolicyError containing %q", err, tc.want)
			}
		})
	}
}

// TestPolicyRecordErrors: a policy record of a policy version that was not read, and
// record sets of a policy record that was not read, are refused.
func TestPolicyRecordErrors(t *testing.T) {
	doc, _ := json.Marshal(map[string]any{"AWSPolicyFormatVersion": "2015-10-01", "RecordType": "A", "StartEndpoint": "e",
		"Endpoints": map[string]any{"e": map[string]string{"Type": "value", "Value": "192.0.2.1"}}})
	_, err := Convert(Input{Zone: "example.com.", TrafficPolicies: []TrafficPolicy{{Id: "tp", Version: 1, Document: string(doc)}},
		PolicyRecords: []PolicyRecord{{Name: "www.example.com.", TTL: 60, TrafficPolicyId: "tp", TrafficPolicyVersion: 2}}})
	if err == nil || !strings.Contains(err.Error(), "traffic policy tp version 2 is not among the traffic policies read") {
		t.Errorf("missing version: %v", err)
	}
	sets, err := ReadRecordSets(strings.NewReader(`[{"Name":"x.example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}],"TrafficPolicyInstanceId":"pi-other"}]`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Convert(Input{Zone: "example.com.", RecordSets: sets})
	if err == nil || !strings.Contains(err.Error(), "created by traffic policy instance pi-other") {
		t.Errorf("record set of a policy record not read: %v", err)
	}
	if _, err := ReadTrafficPolicies(strings.NewReader(string(doc)), ""); err == nil || !strings.Contains(err.Error(), "name its policy, as ID[:VERSION]=FILE") {
		t.Errorf("bare document without an ID: %v", err)
	}
	if ps, err := ReadTrafficPolicies(strings.NewReader(string(doc)), "tp:3"); err != nil || len(ps) != 1 || ps[0].Id != "tp" || ps[0].Version != 3 {
		t.Errorf("bare document as tp:3: %+v, %v", ps, err)
	}
	if _, err := ReadPolicyRecords(strings.NewReader(`[{"Name":"www.example.com.","TTL":60}]`)); err == nil {
		t.Error("a policy record without its policy was read")
	}
}
