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
		{"endpoint ID twice", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"x","Endpoints":{"x":{"Type":"value","Value":"192.0.2.1"},"x":{"Type":"value","Value":"192.0.2.2"}}}`,
			`endpoint "x": the endpoint ID is given twice in Endpoints`},
		{"rule ID twice", tfDoc(`"top":{"RuleType":"failover","Primary":{"EndpointReference":"e1"},"Secondary":{"EndpointReference":"e2"}},
			"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1"}]}`),
			`rule "top": the rule ID is given twice in Rules`},
		{"field twice in an item", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1","Weight":"2"}]}`),
			`rule "top": "Weight" is given twice in one object`},
		{"unreachable rule of an unknown type", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1"}]},
			"spare":{"RuleType":"random","Items":[{"EndpointReference":"e2"}]}`),
			`rule "spare": RuleType "random": not supported`},
		{"self reference", tfDoc(`"top":{"RuleType":"weighted","Items":[{"RuleReference":"top","Weight":"1"}]}`),
			`rule "top": rules refer to each other in a cycle: top -> top`},
		{"trailing data", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"x","Endpoints":{"x":{"Type":"value","Value":"192.0.2.1"}}} {}`,
			`document: more after the JSON value`},
		{"not an object", `[1,2]`, `document: json: cannot unmarshal array`},
		{"too long", tfDoc(`"top":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1"}]}`) + strings.Repeat(" ", maxDocument),
			`document of 102` /* bytes */},
		{"field of another rule type in an item", tfDoc(`"top":{"RuleType":"geo","Locations":[{"Country":"FR","Weight":"5","EndpointReference":"e1"}]}`),
			`rule "top": item 0: Weight is not a field of a geo rule's items`},
		{"evaluate target health in multivalue", tfDoc(`"top":{"RuleType":"multivalue","Items":[{"EndpointReference":"e1","EvaluateTargetHealth":true}]}`),
			`rule "top": item 0: EvaluateTargetHealth is not a field of a multivalue rule's items`},
		{"location beside a region", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Region":"aws:route53:us-east-1","Location":{"Type":"Region","LocationName":"aws:route53:us-east-1"},"EndpointReference":"e1"}]}`),
			`rule "top": item 0: Location with Region, Latitude or Longitude beside it`},
		{"location of an unknown type", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Location":{"Type":"City","LocationName":"Paris"},"EndpointReference":"e1"}]}`),
			`rule "top": item 0: Location Type "City", expected Region, LocalZone or Coordinate`},
		{"coordinate location without longitude", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Location":{"Type":"Coordinate","Latitude":"48.85"},"EndpointReference":"e1"}]}`),
			`rule "top": item 0: a Location of Type Coordinate takes a Latitude and a Longitude only`},
		{"unknown field in a location", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Location":{"Type":"Region","LocationName":"aws:route53:us-east-1","Zone":"a"},"EndpointReference":"e1"}]}`),
			`rule "top": json: unknown field "Zone"`},
		{"latitude out of range", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Location":{"Type":"Coordinate","Latitude":"95","Longitude":"2.35"},"EndpointReference":"e1"}]}`),
			`rule "top": record set www.example.com. A ("e1"): GeoProximityLocation Coordinates "95" "2.35", expected a latitude (-90 to 90)`},
		{"latitude not a number", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Latitude":"NaN","Longitude":"2.35","EndpointReference":"e1"}]}`),
			`rule "top": record set www.example.com. A ("e1"): GeoProximityLocation Coordinates "NaN" "2.35", expected a latitude (-90 to 90)`},
		{"bias out of range", tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Region":"aws:route53:us-east-1","Bias":"100","EndpointReference":"e1"}]}`),
			`rule "top": record set www.example.com. A ("e1"): GeoProximityLocation Bias 100, expected -99 to 99`},
		{"s3 bucket without its region", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"s3","Endpoints":{"s3":{"Type":"s3-website","Value":"www.example.com"}}}`,
			`endpoint "s3": an s3-website endpoint naming the bucket www.example.com needs the bucket's Region`},
		{"IsDefault with a country", tfDoc(`"top":{"RuleType":"geo","Locations":[{"IsDefault":true,"Country":"FR","EndpointReference":"e1"}]}`),
			`rule "top": item 0: IsDefault with a location other than Country *`},
		{"boolean that is not one", tfDoc(`"top":{"RuleType":"failover","Primary":{"EndpointReference":"e1","EvaluateTargetHealth":"yes"},"Secondary":{"EndpointReference":"e2"}}`),
			`rule "top": "yes" is not true or false`},
		{"rules mixing a CNAME and addresses", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartRule":"top",
			"Endpoints":{"lb":{"Type":"application-load-balancer","Value":"alb-1.us-east-1.elb.amazonaws.com"},"e2":{"Type":"value","Value":"192.0.2.2"}},
			"Rules":{"top":{"RuleType":"weighted","Items":[{"EndpointReference":"lb","Weight":"1"},{"EndpointReference":"e2","Weight":"1"}]}}}`,
			`rule "top": record set www.example.com. A ("lb"): the CNAME that answers its alias would share the name with the A record set ("e2")`},
		{"a rule answering a CNAME referred to beside addresses", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartRule":"top",
			"Endpoints":{"lb":{"Type":"elastic-load-balancer","Value":"elb-1.us-east-1.elb.amazonaws.com"},"e2":{"Type":"value","Value":"192.0.2.2"}},
			"Rules":{"top":{"RuleType":"failover","Primary":{"RuleReference":"lbw"},"Secondary":{"EndpointReference":"e2"}},
			"lbw":{"RuleType":"weighted","Items":[{"EndpointReference":"lb","Weight":"1"}]}}}`,
			`rule "top": record set www.example.com. A ("primary"): alias to _tf-lbw.www.example.com. mixes a CNAME and other records at www.example.com. through aliases`},
		{"two rules, one answering a CNAME", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartRule":"top",
			"Endpoints":{"lb":{"Type":"elastic-load-balancer","Value":"elb-1.us-east-1.elb.amazonaws.com"},"e2":{"Type":"value","Value":"192.0.2.2"}},
			"Rules":{"top":{"RuleType":"failover","Primary":{"RuleReference":"addr"},"Secondary":{"RuleReference":"lbw"}},
			"addr":{"RuleType":"weighted","Items":[{"EndpointReference":"e2","Weight":"1"}]},
			"lbw":{"RuleType":"weighted","Items":[{"EndpointReference":"lb","Weight":"1"}]}}}`,
			`rule "top": record set www.example.com. A ("secondary"): alias to _tf-lbw.www.example.com. mixes a CNAME`},
		{"start endpoint missing", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"gone","Endpoints":{"x":{"Type":"value","Value":"192.0.2.1"}}}`,
			`endpoint "gone": StartEndpoint names no endpoint of the document`},
		{"both starts", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"x","StartRule":"top","Endpoints":{"x":{"Type":"value","Value":"192.0.2.1"}}}`,
			`expected one of StartRule and StartEndpoint`},
		{"rule without a type", tfDoc(`"top":{"Items":[{"EndpointReference":"e1","Weight":"1"}]}`),
			`rule "top": RuleType "": not supported`},
		{"endpoint without a type", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"x","Endpoints":{"x":{"Value":"192.0.2.1"}}}`,
			`endpoint "x": Type "": not supported`},
		{"value that is not the record type's", `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"AAAA","StartEndpoint":"x","Endpoints":{"x":{"Type":"value","Value":"192.0.2.1"}}}`,
			`endpoint "x": record set www.example.com. AAAA`},
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
