package route53

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// convertDoc converts doc bound by a policy record at www.example.com. with TTL 60.
func convertDoc(doc string) (*Result, error) {
	return Convert(Input{Zone: "example.com.", TrafficPolicies: []TrafficPolicy{{Id: "tp", Version: 1, Document: doc}},
		PolicyRecords: []PolicyRecord{{Name: "www.example.com.", TTL: 60, TrafficPolicyId: "tp", TrafficPolicyVersion: 1}}})
}

// TestTrafficFlowRuleNames: rule IDs that give one label get -2, -3 in the order the
// start rule reaches them, and a long ID is cut to a label of 50 characters, so that
// every valid document has names.
func TestTrafficFlowRuleNames(t *testing.T) {
	long := strings.Repeat("Region_Selector", 6)
	doc := `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartRule":"top",
		"Endpoints":{"e1":{"Type":"value","Value":"192.0.2.1"},"e2":{"Type":"value","Value":"192.0.2.2"}},
		"Rules":{"top":{"RuleType":"failover","Primary":{"RuleReference":"eu_west"},"Secondary":{"RuleReference":"EU-West"}},
		"eu_west":{"RuleType":"weighted","Items":[{"RuleReference":"` + long + `","Weight":"1"}]},
		"EU-West":{"RuleType":"weighted","Items":[{"EndpointReference":"e2","Weight":"1"}]},
		"` + long + `":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"1"}]}}}`
	res, err := convertDoc(doc)
	if err != nil {
		t.Fatal(err)
	}
	label := strings.ToLower(strings.ReplaceAll(long, "_", "-"))[:50]
	for _, want := range []string{
		"primary alias _tf-eu-west.www.example.com.", "secondary alias _tf-eu-west-2.www.example.com.",
		"record _tf-eu-west.www.example.com. weighted", "record _tf-eu-west-2.www.example.com. weighted",
		"alias _tf-" + label + ".www.example.com.", "record _tf-" + label + ".www.example.com. weighted",
	} {
		if !strings.Contains(res.Corefile, want) {
			t.Errorf("no %q in\n%s", want, res.Corefile)
		}
	}
}

// TestTrafficFlowDeepChain: a chain of rules as long as a document of Route 53's
// largest size holds converts, one name per rule, and the same chain closed into a
// cycle is refused naming its first rule.
func TestTrafficFlowDeepChain(t *testing.T) {
	chain := func(n int, closed bool) string {
		var b strings.Builder
		b.WriteString(`{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartRule":"r0","Endpoints":{"e":{"Type":"value","Value":"192.0.2.1"}},"Rules":{`)
		for i := range n {
			next := fmt.Sprintf(`"RuleReference":"r%d"`, i+1)
			if i == n-1 {
				next = `"EndpointReference":"e"`
				if closed {
					next = `"RuleReference":"r0"`
				}
			}
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"r%d":{"RuleType":"weighted","Items":[{%s,"Weight":"1"}]}`, i, next)
		}
		b.WriteString("}}")
		return b.String()
	}
	n := 1200
	if doc := chain(n, false); len(doc) > maxDocument {
		t.Fatalf("a chain of %d rules is %d bytes, over %d", n, len(doc), maxDocument)
	}
	res, err := convertDoc(chain(n, false))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(res.Corefile, "record "); got != n {
		t.Errorf("%d record sets, want %d", got, n)
	}
	_, err = convertDoc(chain(n, true))
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Rule != "r0" || !strings.Contains(err.Error(), "in a cycle: r0 -> r1 -> r2") {
		t.Errorf("closed chain: %v, want a cycle refused at rule r0", err)
	}
}

// TestTrafficFlowGeoDefault: the default location written as the reference does,
// Country "*" with or without IsDefault true, becomes the default member.
func TestTrafficFlowGeoDefault(t *testing.T) {
	for _, loc := range []string{`"Country":"*"`, `"Country":"*","IsDefault":true`, `"IsDefault":"true"`} {
		res, err := convertDoc(tfDoc(`"top":{"RuleType":"geo","Locations":[{` + loc + `,"EndpointReference":"e1"},{"Country":"FR","EndpointReference":"e2"}]}`))
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if !strings.Contains(res.Corefile, "default A 192.0.2.1 id e1") || !strings.Contains(res.Corefile, "country FR A 192.0.2.2 id e2") {
			t.Errorf("%s: got\n%s", loc, res.Corefile)
		}
	}
}

// TestTrafficFlowS3Website: an s3-website endpoint's Value is the bucket, answered at
// its region's website endpoint (dash or dot form by region), or the website
// endpoint itself.
func TestTrafficFlowS3Website(t *testing.T) {
	for _, tc := range []struct{ value, region, want string }{
		{"www.example.com", "us-east-1", "www.example.com.s3-website-us-east-1.amazonaws.com."},
		{"www.example.com", "eu-central-1", "www.example.com.s3-website.eu-central-1.amazonaws.com."},
		{"www.example.com", "cn-north-1", "www.example.com.s3-website.cn-north-1.amazonaws.com.cn."},
		{"example.com.s3-website-us-east-1.amazonaws.com", "", "example.com.s3-website-us-east-1.amazonaws.com."},
	} {
		region := ""
		if tc.region != "" {
			region = `,"Region":"` + tc.region + `"`
		}
		res, err := convertDoc(`{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"s3",
			"Endpoints":{"s3":{"Type":"s3-website","Value":"` + tc.value + `"` + region + `}}}`)
		if err != nil {
			t.Fatalf("%s in %q: %v", tc.value, tc.region, err)
		}
		if !strings.Contains(res.Corefile, "CNAME "+tc.want) {
			t.Errorf("%s in %q: want CNAME %s, got\n%s", tc.value, tc.region, tc.want, res.Corefile)
		}
	}
}

// FuzzTrafficPolicyDocument: whatever the document, converting it returns a result or
// an error naming the policy record, never panics; a refusal is a PolicyError.
func FuzzTrafficPolicyDocument(f *testing.F) {
	for _, seed := range []string{
		tfDoc(`"top":{"RuleType":"failover","Primary":{"RuleReference":"w","EvaluateTargetHealth":"true"},"Secondary":{"EndpointReference":"e2"}},
			"w":{"RuleType":"weighted","Items":[{"EndpointReference":"e1","Weight":"3"},{"EndpointReference":"e2","Weight":1}]}`),
		tfDoc(`"top":{"RuleType":"geoproximity","GeoproximityLocations":[{"Location":{"Type":"Coordinate","Latitude":"51.50","Longitude":"-0.16"},"Bias":"5","EndpointReference":"e1"},{"Region":"aws:route53:us-east-1","EndpointReference":"e2"}]}`),
		tfDoc(`"top":{"RuleType":"geo","Locations":[{"Country":"*","EndpointReference":"e1"},{"Subdivision":"US-WA","RuleReference":"l"}]},
			"l":{"RuleType":"latency","Regions":[{"Region":"us-east-1","EndpointReference":"e2"}]}`),
		tfDoc(`"top":{"RuleType":"multivalue","Items":[{"EndpointReference":"e1"},{"EndpointReference":"e2"}]}`),
		`{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"s3","Endpoints":{"s3":{"Type":"s3-website","Region":"us-east-1","Value":"www.example.com"}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		_, err := convertDoc(doc)
		if err == nil {
			return
		}
		var pe *PolicyError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "policy record www.example.com. (traffic policy tp:1)") {
			t.Fatalf("error %v (%T) is not a PolicyError naming the policy record", err, err)
		}
	})
}
