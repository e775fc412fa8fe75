package route53

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// awsExample converts one document of testdata/trafficflow/aws/ (the examples of AWS's
// traffic policy document format reference, verbatim) bound by a policy record at
// name with TTL 60, with the three health checks the examples name.
func awsExample(t *testing.T, file, name string) (*Result, error) {
	t.Helper()
	dir := "testdata/trafficflow/aws/"
	in, err := (&Files{Records: "testdata/trafficflow/records.json", HealthChecks: dir + "checks.json",
		TrafficPolicies: []string{"tp-example=" + dir + file}}).Load()
	if err != nil {
		t.Fatal(err)
	}
	in.RecordSets = in.RecordSets[:1] // the zone's SOA only
	in.PolicyRecords = []PolicyRecord{{Name: name, TTL: 60, TrafficPolicyId: "tp-example", TrafficPolicyVersion: 1}}
	return Convert(in)
}

// TestTrafficFlowAWSExamples converts the example documents of the format reference
// that healthroute reproduces, and the geoproximity ones with their load balancer
// replaced by a value endpoint (-values), and compares the text with each .golden
// file (go test -update rewrites them). Endpoints that are AWS resources (ELB, S3
// website) become a CNAME to their DNS name, with a warning each.
func TestTrafficFlowAWSExamples(t *testing.T) {
	examples := map[string]string{"failover": "www.example.com.", "geolocation": "geo.example.com.", "combined": "mixed.example.com.",
		"geoproximity-2015-values": "near.example.com.", "geoproximity-2023-values": "near.example.com.",
		"latency": "fast.example.com.", "weighted": "rr.example.com."}
	for base, name := range examples {
		t.Run(base, func(t *testing.T) {
			res, err := awsExample(t, base+".json", name)
			if err != nil {
				t.Fatal(err)
			}
			got, path := golden(res), filepath.Join("testdata/trafficflow/aws", base+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n%s", path, got)
			}
		})
	}
}

// TestTrafficFlowAWSResourceEndpoints: every endpoint that is an AWS resource becomes
// a CNAME to its DNS name with a warning naming the record set, the S3 website one to
// the bucket's website endpoint in its region; such an endpoint is refused, naming
// it, for a record type a CNAME cannot stand for, and in a rule whose other items
// answer addresses or refer to rules (a CNAME must be alone at its name), as in the
// reference's geoproximity example. An alias to a rule whose endpoints are all
// answered with CNAMEs is a CNAME too: the combined example (geolocation, latency
// and failover over load balancers, an S3 website by default) converts.
func TestTrafficFlowAWSResourceEndpoints(t *testing.T) {
	res, err := awsExample(t, "failover.json", "www.example.com.")
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"elb-111111.us-east-1.elb.amazonaws.com.", "www.example.com.s3-website-us-east-1.amazonaws.com."} {
		if !strings.Contains(res.Corefile, "CNAME "+host) {
			t.Errorf("no CNAME %s in\n%s", host, res.Corefile)
		}
		var warned bool
		for _, w := range res.Warnings {
			warned = warned || strings.Contains(w, "alias to "+host+", outside the zone, is answered with a CNAME to it")
		}
		if !warned {
			t.Errorf("no warning for %s in %q", host, res.Warnings)
		}
	}
	for file, want := range map[string][2]string{
		"geoproximity-2015.json": {"geoprox-rule", `("aws-us-west-1-region"): the CNAME that answers its alias would share the name with the A record set ("london-data-center")`},
	} {
		_, err := awsExample(t, file, "mixed.example.com.")
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.Rule != want[0] || !strings.Contains(err.Error(), want[1]) {
			t.Errorf("%s: %v, want refused naming rule %s and %s", file, err, want[0], want[1])
		}
	}
	types := map[string]string{"cloudfront": "d111111abcdef8.cloudfront.net.",
		"application-load-balancer": "exampleAlb-1283637735.us-east-1.elb.amazonaws.com.",
		"network-load-balancer":     "exampleNlb-74f87b114e21682a.elb.us-east-1.amazonaws.com.",
		"elastic-beanstalk":         "example-beanstalk-env-1.eba-ns4qrife.us-east-1.elasticbeanstalk.com.",
		"elastic-load-balancer":     "dualstack.my-load-balancer-1234567890.us-west-2.elb.amazonaws.com."}
	for typ, host := range types {
		for _, rt := range []string{"A", "AAAA"} {
			doc := `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"` + rt + `","StartEndpoint":"res",
				"Endpoints":{"res":{"Type":"` + typ + `","Value":"` + host + `"}}}`
			res, err := Convert(Input{Zone: "example.com.", TrafficPolicies: []TrafficPolicy{{Id: "tp", Version: 1, Document: doc}},
				PolicyRecords: []PolicyRecord{{Name: "res.example.com.", TTL: 60, TrafficPolicyId: "tp", TrafficPolicyVersion: 1}}})
			if err != nil {
				t.Fatalf("%s %s: %v", typ, rt, err)
			}
			if !strings.Contains(res.Corefile, "record res.example.com. simple {\n    CNAME "+strings.ToLower(host)) &&
				!strings.Contains(res.Corefile, "CNAME "+host) {
				t.Errorf("%s %s: no CNAME to %s in\n%s", typ, rt, host, res.Corefile)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "is answered with a CNAME to it") {
				t.Errorf("%s %s: warnings %q, want the CNAME one", typ, rt, res.Warnings)
			}
		}
	}
	doc := `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"TXT","StartEndpoint":"cf",
		"Endpoints":{"cf":{"Type":"cloudfront","Value":"d111111abcdef8.cloudfront.net"}}}`
	_, err = Convert(Input{Zone: "example.com.", TrafficPolicies: []TrafficPolicy{{Id: "tp", Version: 1, Document: doc}},
		PolicyRecords: []PolicyRecord{{Name: "res.example.com.", TTL: 60, TrafficPolicyId: "tp", TrafficPolicyVersion: 1}}})
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Endpoint != "cf" || !strings.Contains(err.Error(), "outside the zone for type TXT") {
		t.Errorf("cloudfront endpoint for TXT: %v, want refused naming endpoint cf", err)
	}
}

// TestTrafficFlowAWSLocalZoneExample: the reference's 2023-05-09 geoproximity example
// places one endpoint in a Local Zone, whose location healthroute does not know: it is
// refused naming the rule and the item (geoproximity-2023-values, without it,
// converts in TestTrafficFlowAWSExamples).
func TestTrafficFlowAWSLocalZoneExample(t *testing.T) {
	_, err := awsExample(t, "geoproximity-2023.json", "near.example.com.")
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Rule != "geoprox-rule" || !errors.Is(err, ErrUnsupported) ||
		!strings.Contains(err.Error(), "item 1: Location LocalZone aws:route53:us-east-1-atl-1a") {
		t.Errorf("Local Zone example: %v, want refused naming rule geoprox-rule, item 1", err)
	}
}
