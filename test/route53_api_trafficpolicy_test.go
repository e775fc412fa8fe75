package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// rdata returns the answer section's records without their owner names, sorted.
func rdata(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		out = append(out, dns.TypeToString[rr.Header().Rrtype]+" "+strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	slices.Sort(out)
	return out
}

// TestRoute53APITrafficPolicyWithTheAWSCLI creates AWS's failover, latency and
// geolocation example document as a traffic policy with the aws CLI and
// instantiates it at api.example.org: it answers as the same document, loaded
// from its file by the route53 property (with no records file) at
// file.example.org, answers; deleting the instance removes its answers.
func TestRoute53APITrafficPolicyWithTheAWSCLI(t *testing.T) {
	doc, err := filepath.Abs(filepath.Join("..", "route53", "testdata", "trafficflow", "aws", "combined.json"))
	if err != nil {
		t.Fatal(err)
	}
	instances := filepath.Join(t.TempDir(), "instances.json")
	if err := os.WriteFile(instances, []byte(`[{"Name": "file.example.org.", "TTL": 60, "TrafficPolicyId": "tp-file", "TrafficPolicyVersion": 1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startR53(t, "        route53 {\n            traffic_policy tp-file="+doc+"\n            policy_records "+instances+"\n        }")
	cli := newAWSCLI(t, s.api)
	var tp struct{ TrafficPolicy struct{ Id, Type string } }
	cli.json(t, &tp, "create-traffic-policy", "--name", "combined", "--document", "file://"+doc)
	var in struct {
		TrafficPolicyInstance struct{ Id, Name, State string }
	}
	cli.json(t, &in, "create-traffic-policy-instance", "--hosted-zone-id", s.zoneID, "--name", "api.example.org", "--ttl", "60",
		"--traffic-policy-id", tp.TrafficPolicy.Id, "--traffic-policy-version", "1")
	if in.TrafficPolicyInstance.Name != "api.example.org." || in.TrafficPolicyInstance.State != "Applied" {
		t.Errorf("create-traffic-policy-instance: %+v", in)
	}
	want := rdata(s.srv.Query(t, "file.example.org", dns.TypeA))
	if len(want) == 0 {
		t.Fatalf("file.example.org answers nothing from the document loaded from its file")
	}
	s.srv.WaitFor(t, "api.example.org", dns.TypeA, 20*time.Second, "the instance answers as the file's policy record", func(m *dns.Msg) bool {
		return slices.Equal(rdata(m), want)
	})
	for _, qt := range []uint16{dns.TypeCNAME, dns.TypeAAAA, dns.TypeTXT} {
		if g, w := rdata(s.srv.Query(t, "api.example.org", qt)), rdata(s.srv.Query(t, "file.example.org", qt)); !slices.Equal(g, w) {
			t.Errorf("%s: the instance answers %q, the file's policy record %q", dns.TypeToString[qt], g, w)
		}
	}
	var list struct{ TrafficPolicyInstances []struct{ Id string } }
	cli.json(t, &list, "list-traffic-policy-instances")
	if len(list.TrafficPolicyInstances) != 1 || list.TrafficPolicyInstances[0].Id != in.TrafficPolicyInstance.Id {
		t.Errorf("list-traffic-policy-instances: %+v", list)
	}
	if out, err := cli.run(t, "delete-traffic-policy-instance", "--id", in.TrafficPolicyInstance.Id); err != nil {
		t.Fatalf("delete-traffic-policy-instance: %v\n%s", err, out)
	}
	s.srv.WaitFor(t, "api.example.org", dns.TypeA, 20*time.Second, "the deleted instance answers nothing", func(m *dns.Msg) bool {
		return m.Rcode == dns.RcodeNameError
	})
}
