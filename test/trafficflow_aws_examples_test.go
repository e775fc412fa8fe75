package test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// trafficFlowAWSHand is the hand-written tree of three example documents of AWS's
// traffic policy document format reference (route53/testdata/trafficflow/aws/), with
// the imported check names so that one override reaches both blocks.
const trafficFlowAWSHand = `
		check 11111111-1111-1111-1111-111111111111 tcp 192.0.2.101:80
		check 22222222-2222-2222-2222-222222222222 tcp 192.0.2.102:80
		check 33333333-3333-3333-3333-333333333333 tcp 192.0.2.103:80
		record rr.example.com. weighted {
			ttl 60
			weight 3 A 192.0.2.1 check 11111111-1111-1111-1111-111111111111
			weight 1 A 192.0.2.2 check 22222222-2222-2222-2222-222222222222
			weight 1 A 192.0.2.3 check 33333333-3333-3333-3333-333333333333
		}
		record geo.example.com. geolocation {
			ttl 60
			default A 192.0.2.1 check 11111111-1111-1111-1111-111111111111
			country FR A 192.0.2.2 check 22222222-2222-2222-2222-222222222222
			country BE A 192.0.2.2 check 22222222-2222-2222-2222-222222222222
			country DE A 192.0.2.3 check 33333333-3333-3333-3333-333333333333
		}
		record www.example.com. failover {
			primary CNAME elb-111111.us-east-1.elb.amazonaws.com.
			secondary CNAME www.example.com.s3-website-us-east-1.amazonaws.com.
		}`

// TestEndToEndTrafficFlowAWSExamples serves AWS's weighted, geolocation and failover
// (load balancer, S3 website) example documents through the route53 property of a
// real CoreDNS beside a block with the hand-written tree, and checks with real DNS
// queries that both answer alike as the API's overrides take the checks down.
func TestEndToEndTrafficFlowAWSExamples(t *testing.T) {
	dir, err := filepath.Abs("../route53/testdata/trafficflow/aws")
	if err != nil {
		t.Fatal(err)
	}
	port, hand, apiPort := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	api := fmt.Sprintf("api 127.0.0.1:%d { token_file %s }", apiPort, writeToken(t, t.TempDir(), apiToken))
	corefile := fmt.Sprintf(`example.com:%d {
	bind 127.0.0.1
	healthroute {
		%s
		route53 {
			records %[3]s/records.json
			health_checks %[3]s/checks.json
			traffic_policy tp-weighted=%[3]s/weighted.json
			traffic_policy tp-geolocation=%[3]s/geolocation.json
			traffic_policy tp-failover=%[3]s/failover.json
			policy_records %[3]s/instances.json
		}
	}
}
example.com:%[4]d {
	bind 127.0.0.1
	healthroute {
		%[2]s
		%[5]s
	}
}
`, port, api, dir, hand, trafficFlowAWSHand)
	s := coretest.Start(t, corefile, port, "rr.example.com")
	h := &coretest.Server{Addr: fmt.Sprintf("127.0.0.1:%d", hand)}
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	answers := func(srv *coretest.Server, name string, qt uint16) string {
		m := srv.Query(t, name, qt)
		var out []string
		for _, rr := range m.Answer {
			out = append(out, rr.String())
		}
		slices.Sort(out)
		return dns.RcodeToString[m.Rcode] + " " + strings.Join(out, " | ")
	}
	// The loopback client has no country: geo answers its default (english) throughout,
	// from its last resort once its check is down; rr answers srv3 alone once srv1 and
	// srv2 are down.
	for _, down := range []string{"", "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"} {
		if down != "" {
			if code, body := httpDo(t, http.MethodPost, base+"/v1/checks/"+down+"/override", apiToken, "unhealthy"); code != http.StatusOK {
				t.Fatalf("override %s: %d %s", down, code, body)
			}
		}
		if down == "22222222-2222-2222-2222-222222222222" {
			for _, srv := range []*coretest.Server{s, h} {
				srv.WaitFor(t, "rr.example.com", dns.TypeA, 5*time.Second, "srv1 and srv2 down: rr answers srv3",
					func(m *dns.Msg) bool { return firstA(m) == "192.0.2.3" })
			}
		}
		for _, q := range []struct {
			name string
			qt   uint16
		}{{"geo.example.com", dns.TypeA}, {"www.example.com", dns.TypeA}, {"www.example.com", dns.TypeCNAME}, {"nope.example.com", dns.TypeA}} {
			if g, w := answers(s, q.name, q.qt), answers(h, q.name, q.qt); g != w {
				t.Errorf("%q down, %s %s: imported %s, hand-written %s", down, q.name, dns.TypeToString[q.qt], g, w)
			}
		}
		if a := answers(s, "www.example.com", dns.TypeCNAME); !strings.Contains(a, "CNAME\telb-111111.us-east-1.elb.amazonaws.com.") {
			t.Errorf("www CNAME: %s, want the load balancer", a)
		}
		if a := firstA(s.Query(t, "geo.example.com", dns.TypeA)); a != "192.0.2.1" {
			t.Errorf("%q down: geo answered %q to a client of no country, want the default 192.0.2.1", down, a)
		}
	}
}
