package test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// TestEndToEndAZAffinity runs the real CoreDNS binary with two server blocks for one
// zone, one replica placed in use1-az1 and one in eu-west-1 (their `location` lines),
// each answering an azaffinity record set from real HTTP endpoints' health: members
// fail one by one and every answer falls back outward from the replica's location;
// ECS queries from client_location prefixes are placed by their prefix and carry its
// scope; /v1/explain says what DNS answers.
func TestEndToEndAZAffinity(t *testing.T) {
	az1, zg, reg, glob := newFlipServer(t, false), newFlipServer(t, false), newFlipServer(t, false), newFlipServer(t, false)
	port, other, apiPort := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	// Probes every 100 ms that change state on one result (fastCheck), so that each
	// step takes a fraction of a second; the policy does not depend on the timers.
	checks := strings.Join([]string{fastCheck("az1", az1.URL), fastCheck("zg", zg.URL), fastCheck("reg", reg.URL), fastCheck("glob", glob.URL)}, "\n\t\t")
	records := `record svc.example.org. azaffinity {
			az use1-az1 A 192.0.2.1 check az1
			zone_group us-east-1-zg-1 A 192.0.2.2 check zg
			region us-east-1 A 192.0.2.3 check reg
			region eu-west-1 A 192.0.2.7
			global A 192.0.2.5 check glob
		}`
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		location az use1-az1
		client_location region eu-west-1 10.9.0.0/16
		api 127.0.0.1:%d
		%s
		%s
	}
}
example.org:%d {
	bind 127.0.0.1
	healthroute {
		location region eu-west-1
		%s
		%s
	}
}
`, port, apiPort, checks, records, other, checks, records)
	s := coretest.Start(t, corefile, port, "svc.example.org")
	eu := &coretest.Server{Addr: fmt.Sprintf("127.0.0.1:%d", other)}
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)

	explain := func(client string) view.Explanation {
		var v view.Explanation
		getJSON(t, base+"/v1/explain?"+url.Values{"name": {"svc.example.org"}, "client": {client}}.Encode(), &v)
		return v
	}
	steps := []struct {
		fail *flipServer
		want string // the use1-az1 replica's answer once fail is down
	}{
		{nil, "192.0.2.1"}, {az1, "192.0.2.2"}, {zg, "192.0.2.3"}, {reg, "192.0.2.5"}, {glob, "192.0.2.1"},
	}
	for _, st := range steps {
		if st.fail != nil {
			st.fail.ok.Store(false)
		}
		s.WaitFor(t, "svc.example.org", dns.TypeA, 10*time.Second, "use1-az1 replica answers "+st.want,
			func(m *dns.Msg) bool { return firstA(m) == st.want })
		// The eu-west-1 replica answers its region's member, which has no check.
		if got := firstA(eu.Query(t, "svc.example.org", dns.TypeA)); got != "192.0.2.7" {
			t.Errorf("eu-west-1 replica: %s, want 192.0.2.7", got)
		}
		// A resolver in eu-west-1 asking the use1-az1 replica with ECS is placed by
		// its prefix, and the answer's scope is the prefix's /16.
		a, ecs, _ := queryECS(t, s.Addr, "svc.example.org.", "10.9.8.0/24")
		if a != "192.0.2.7" || ecs == nil || ecs.SourceScope != 16 {
			t.Errorf("ECS 10.9.8.0/24 to the use1-az1 replica: %s scope %+v, want 192.0.2.7 scope /16", a, ecs)
		}
		// Explain for a client of the server's location agrees with DNS.
		a, ecs, _ = queryECS(t, s.Addr, "svc.example.org.", "192.0.2.0/24")
		v := explain("192.0.2.0/24")
		if len(v.Answer) != 1 || !strings.HasSuffix(v.Answer[0], a) || v.Scope != ecs.SourceScope ||
			v.Trace.Steps[0].Location != "az use1-az1 (the server's location line)" {
			t.Errorf("explain %+v, want DNS's %s scope /%d from the server's location", v, a, ecs.SourceScope)
		}
	}
	v := explain("192.0.2.0/24")
	if !v.Trace.Steps[0].LastResort || v.Trace.Steps[0].Members[0].Reason != "chosen as the last resort: no member is healthy" {
		t.Errorf("every member of use1-az1's locations down: %+v, want the AZ's member as the last resort", v.Trace.Steps[0])
	}
}
