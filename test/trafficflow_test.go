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

// trafficFlowHand is the hand-written tree of route53/testdata/trafficflow/'s www, mv
// and one policy records, with the imported check names so that one override reaches
// both blocks.
const trafficFlowHand = `
		check hc-web-1 tcp 192.0.2.11:443
		check hc-web-2 tcp 192.0.2.12:443
		record www.example.com. failover {
			primary alias pool.example.com.
			secondary A 198.51.100.99
		}
		record pool.example.com. weighted {
			ttl 60
			weight 3 A 192.0.2.11 check hc-web-1
			weight 1 A 192.0.2.12 check hc-web-2
		}
		record mv.example.com. multivalue {
			ttl 30
			value A 203.0.113.1 check hc-web-1
			value A 203.0.113.2 check hc-web-2
			value A 203.0.113.3
		}
		record one.example.com. simple {
			ttl 120
			A 10.0.0.2
		}`

// TestEndToEndTrafficFlow serves traffic policy documents through the route53
// property of a real CoreDNS beside a block with the hand-written tree, and checks
// with real DNS queries that both answer alike, TTLs included, as the API's overrides
// take the weighted pool's checks down one by one.
func TestEndToEndTrafficFlow(t *testing.T) {
	dir, err := filepath.Abs("../route53/testdata/trafficflow")
	if err != nil {
		t.Fatal(err)
	}
	port, hand, apiPort := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	tmp := t.TempDir()
	api := fmt.Sprintf("api 127.0.0.1:%d { token_file %s }", apiPort, writeToken(t, tmp, apiToken))
	corefile := fmt.Sprintf(`example.com:%d {
	bind 127.0.0.1
	healthroute {
		%s
		route53 {
			records %s/records.json
			health_checks %s/checks.json
			traffic_policy %s/failover.policy.json
			traffic_policy tp-geo=%s/geo.document.json
			traffic_policy %s/versions.policy.json
			policy_records %s/instances.json
		}
	}
}
example.com:%d {
	bind 127.0.0.1
	healthroute {
		%s
		%s
	}
}
`, port, api, dir, dir, dir, dir, dir, dir, hand, api, trafficFlowHand)
	s := coretest.Start(t, corefile, port, "one.example.com")
	h := &coretest.Server{Addr: fmt.Sprintf("127.0.0.1:%d", hand)}
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)

	answers := func(srv *coretest.Server, name string) string {
		m := srv.Query(t, name, dns.TypeA)
		var out []string
		for _, rr := range m.Answer {
			out = append(out, rr.String())
		}
		slices.Sort(out)
		return dns.RcodeToString[m.Rcode] + " " + strings.Join(out, " | ")
	}
	steps := []struct {
		down string
		www  string // the one answer www has once down is overridden; "" while the pool answers at random
	}{{"", ""}, {"hc-web-1", "192.0.2.12"}, {"hc-web-2", "198.51.100.99"}}
	for _, st := range steps {
		if st.down != "" {
			if code, body := httpDo(t, http.MethodPost, base+"/v1/checks/"+st.down+"/override", apiToken, "unhealthy"); code != http.StatusOK {
				t.Fatalf("override %s: %d %s", st.down, code, body)
			}
		}
		for _, n := range []string{"mv.example.com", "one.example.com", "nope.example.com"} {
			if g, w := answers(s, n), answers(h, n); g != w {
				t.Errorf("%s down, %s: imported %s, hand-written %s", st.down, n, g, w)
			}
		}
		if st.www == "" {
			for _, srv := range []*coretest.Server{s, h} {
				if a := firstA(srv.Query(t, "www.example.com", dns.TypeA)); a != "192.0.2.11" && a != "192.0.2.12" {
					t.Errorf("all healthy: www answered %s on %s, want the pool", a, srv.Addr)
				}
			}
			continue
		}
		for _, srv := range []*coretest.Server{s, h} {
			m := srv.WaitFor(t, "www.example.com", dns.TypeA, 5*time.Second, st.down+" down: www answers "+st.www,
				func(m *dns.Msg) bool { return firstA(m) == st.www })
			if ttl := m.Answer[0].Header().Ttl; ttl != 60 {
				t.Errorf("%s down: www TTL %d on %s, want the policy record's 60", st.down, ttl, srv.Addr)
			}
		}
	}
}
