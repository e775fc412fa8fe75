package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

const apiToken = "s3cret-token-for-tests-0123456789"

// apiCorefile is a latency -> weighted tree and a failover pair, all checked against
// real HTTP endpoints, with the API on apiPort. tokenLine is the api block's body.
func apiCorefile(port, apiPort int, tokenLine string, ttl int, use1, apse2, web string) string {
	api := fmt.Sprintf("api 127.0.0.1:%d", apiPort)
	if tokenLine != "" {
		api += " {\n\t\t\t" + tokenLine + "\n\t\t}"
	}
	return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		ttl %d
		%s
		region us-east-1 38.9 -77.0
		region ap-southeast-2 -33.9 151.2
		%s
		%s
		%s
		%s
		record www.example.org. latency {
			region us-east-1      alias use1.example.org.
			region ap-southeast-2 alias apse2.example.org.
		}
		record use1.example.org. weighted {
			weight 10 A 192.0.2.1 check use1-a
			weight 10 A 192.0.2.2 check use1-b
		}
		record apse2.example.org. weighted {
			weight 10 A 198.51.100.1 check apse2-a
		}
		record api.example.org. failover {
			primary   A 192.0.2.20 check web id east
			secondary A 198.51.100.20 id west
		}
	}
}
`, port, ttl, api, fastCheck("use1-a", use1+"/a"), fastCheck("use1-b", use1+"/b"),
		fastCheck("apse2-a", apse2+"/a"), fastCheck("web", web+"/health"))
}

// apiFixture is a running CoreDNS with the API, and the endpoints its checks probe.
type apiFixture struct {
	srv              *coretest.Server
	base             string // http://127.0.0.1:PORT
	use1, apse2, web *flipServer
	port, apiPort    int
	tokenLine        string
}

func startAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	f := &apiFixture{use1: newFlipServer(t, false), apse2: newFlipServer(t, false), web: newFlipServer(t, false),
		port: coretest.FreePort(t), apiPort: coretest.FreePort(t)}
	dir := t.TempDir()
	f.tokenLine = "token_file " + writeToken(t, dir, apiToken)
	f.srv = coretest.Start(t, f.corefile(f.tokenLine, 30), f.port, "www.example.org")
	f.base = fmt.Sprintf("http://127.0.0.1:%d", f.apiPort)
	// Every check has a first result.
	waitUntil(t, 10*time.Second, "every check seen", func() bool {
		cs := apiChecks(t, f.base)
		for _, c := range cs {
			if !c.Seen || c.Probes == 0 {
				return false
			}
		}
		return len(cs) == 4
	}, func() string { _, b := httpDo(t, "GET", f.base+"/v1/checks", "", ""); return b })
	return f
}

func (f *apiFixture) corefile(tokenLine string, ttl int) string {
	return apiCorefile(f.port, f.apiPort, tokenLine, ttl, f.use1.URL, f.apse2.URL, f.web.URL)
}

// TestAPIViews checks the JSON shape and values of /v1/checks and /v1/records.
func TestAPIViews(t *testing.T) {
	f := startAPIFixture(t)

	// Raw shape: the field names are the public interface.
	var raw struct{ Checks []map[string]any }
	getJSON(t, f.base+"/v1/checks", &raw)
	if len(raw.Checks) != 4 {
		t.Fatalf("%d checks, want 4: %v", len(raw.Checks), raw.Checks)
	}
	for _, k := range []string{"name", "type", "target", "interval", "healthy", "probed_healthy", "seen", "last_probe", "last_latency_ms", "probes", "failures"} {
		if _, ok := raw.Checks[0][k]; !ok {
			t.Errorf("/v1/checks: %v lacks %q", raw.Checks[0], k)
		}
	}
	if _, ok := raw.Checks[0]["override"]; ok {
		t.Errorf("/v1/checks: override present without an override: %v", raw.Checks[0])
	}
	cs := apiChecks(t, f.base)
	web := cs["web"]
	if web.Type != "http" || web.Target != f.web.URL+"/health" || !web.Healthy || web.Probed == nil || !*web.Probed ||
		web.Interval != "100ms" || web.LastProbe.IsZero() || web.Failures != 0 || web.LastError != "" {
		t.Errorf("web: %+v", web)
	}
	var ordered struct{ Checks []view.Check }
	getJSON(t, f.base+"/v1/checks", &ordered)
	for i := 1; i < len(ordered.Checks); i++ {
		if ordered.Checks[i-1].Name >= ordered.Checks[i].Name {
			t.Errorf("/v1/checks not sorted by name: %s before %s", ordered.Checks[i-1].Name, ordered.Checks[i].Name)
		}
	}

	var recs struct{ Records []view.Record }
	getJSON(t, f.base+"/v1/records", &recs)
	byName := map[string]view.Record{}
	for _, r := range recs.Records {
		byName[r.Name] = r
	}
	if len(recs.Records) != 4 || recs.Records[0].Name != "www.example.org." {
		t.Fatalf("/v1/records: %+v, want 4 groups in Corefile order", recs.Records)
	}
	www := byName["www.example.org."]
	if www.Type != "A" || www.Policy != "latency" || len(www.Members) != 2 ||
		www.Members[0].Key != "region us-east-1" || www.Members[0].Alias != "use1.example.org." || !www.Members[0].ETH ||
		www.Members[0].Target != "alias use1.example.org." {
		t.Errorf("www: %+v", www)
	}
	apiRec := byName["api.example.org."]
	if apiRec.Policy != "failover" || apiRec.Healthy == nil || !*apiRec.Healthy || apiRec.LastResort ||
		len(apiRec.Members) != 2 || apiRec.Members[0].ID != "east" || apiRec.Members[0].Key != "primary" ||
		apiRec.Members[0].Check != "web" || apiRec.Members[0].Target != "A 192.0.2.20" || !apiRec.Members[0].Healthy ||
		apiRec.Members[1].Key != "secondary" || apiRec.Members[1].Check != "" {
		t.Errorf("api: %+v", apiRec)
	}

	// A failed endpoint shows in both views: the check with its error, the member
	// unhealthy, and a group with no healthy member in its last resort.
	f.apse2.ok.Store(false)
	waitUntil(t, 10*time.Second, "apse2-a unhealthy in /v1/checks", func() bool { return !apiChecks(t, f.base)["apse2-a"].Healthy },
		func() string { _, b := httpDo(t, "GET", f.base+"/v1/checks", "", ""); return b })
	c := apiChecks(t, f.base)["apse2-a"]
	if !strings.Contains(c.LastError, "503") || c.LastChange.IsZero() || c.Failures == 0 || c.Probed == nil || *c.Probed {
		t.Errorf("apse2-a after failing: %+v", c)
	}
	getJSON(t, f.base+"/v1/records", &recs)
	for _, r := range recs.Records {
		if r.Name == "apse2.example.org." && (!r.LastResort || r.Healthy == nil || *r.Healthy || r.Members[0].Healthy) {
			t.Errorf("apse2 with its only member down: %+v, want last resort", r)
		}
	}
}

// TestAPIExplain: for a latency -> weighted tree whose nearest region failed, explain
// names the branch it backed out of, and its answer is the DNS answer.
func TestAPIExplain(t *testing.T) {
	f := startAPIFixture(t)
	q := url.Values{"name": {"www.example.org"}, "type": {"A"}, "client": {"203.0.113.7/24"}, "lat": {"40.7"}, "lon": {"-74.0"}}
	explain := func() view.Explanation {
		var v view.Explanation
		getJSON(t, f.base+"/v1/explain?"+q.Encode(), &v)
		return v
	}
	v := explain()
	if v.Rcode != "NOERROR" || len(v.Answer) != 1 || !strings.Contains(v.Answer[0], "192.0.2.") || v.Client != "203.0.113.0/24" ||
		len(v.Trace.Steps) != 2 || v.Trace.Steps[1].Record != "use1.example.org." || !v.Trace.Steps[0].Members[0].Chosen {
		t.Fatalf("New York, all healthy: %+v, want an answer from use1", v)
	}

	f.use1.ok.Store(false) // both of use1's checks probe this endpoint
	waitUntil(t, 10*time.Second, "use1's checks unhealthy", func() bool {
		cs := apiChecks(t, f.base)
		return !cs["use1-a"].Healthy && !cs["use1-b"].Healthy
	}, func() string { _, b := httpDo(t, "GET", f.base+"/v1/checks", "", ""); return b })
	v = explain()
	b, _ := json.MarshalIndent(v, "", "  ")
	if len(v.Answer) != 1 || !strings.Contains(v.Answer[0], "198.51.100.1") || len(v.Trace.Steps) != 2 {
		t.Fatalf("use1 failed: %s, want apse2's answer", b)
	}
	step := v.Trace.Steps[0]
	use1 := step.Members[0]
	if step.Record != "www.example.org." || step.Policy != "latency" || step.LastResort || use1.Chosen || use1.Healthy ||
		use1.Key != "region us-east-1" || !strings.Contains(use1.Reason, "use1.example.org. has no healthy answer") {
		t.Errorf("use1 failed: step 0 %+v, want us-east-1 backed out of because use1 has no healthy answer", step)
	}
	if apse2 := step.Members[1]; !apse2.Chosen || apse2.Reason != "chosen" {
		t.Errorf("apse2 member %+v, want chosen", apse2)
	}
	if v.Trace.Steps[1].Record != "apse2.example.org." {
		t.Errorf("step 1 %+v, want apse2", v.Trace.Steps[1])
	}
	// The same DNS query from the real server gets the same answer.
	if got := firstA(f.srv.Query(t, "www.example.org", dns.TypeA)); got != "198.51.100.1" {
		t.Errorf("DNS answer %s, explain %v", got, v.Answer)
	}

	for _, bad := range []string{"name=", "name=www.example.org&type=NOPE", "name=www.example.org&client=300.1.1.1", "name=www.example.org&lat=north&lon=1",
		"name=www.example.org&lat=NaN&lon=NaN", "name=www.example.org&lat=0&lon=Inf", "name=www.example.org&lat=91&lon=0"} {
		if code, body := httpDo(t, "GET", f.base+"/v1/explain?"+bad, "", ""); code != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
			t.Errorf("explain?%s: %d %s, want 400 with an error", bad, code, body)
		}
	}
	if code, _ := httpDo(t, "GET", f.base+"/v1/explain?name=www.example.net", "", ""); code != http.StatusNotFound {
		t.Errorf("explain of a name no block serves: %d, want 404", code)
	}
}

// TestAPIOverride: overrides need the bearer token; a refused request changes nothing;
// an accepted one changes the next DNS answer, shows on the page and in /v1/checks,
// survives a reload, and "none" hands the check back to its probes.
func TestAPIOverride(t *testing.T) {
	f := startAPIFixture(t)
	ov := f.base + "/v1/checks/web/override"
	answer := func() string { return firstA(f.srv.Query(t, "api.example.org", dns.TypeA)) }
	if got := answer(); got != "192.0.2.20" {
		t.Fatalf("api: %s, want the primary", got)
	}
	unchanged := func(what string) {
		t.Helper()
		if c := apiChecks(t, f.base)["web"]; c.Override != nil || !c.Healthy {
			t.Errorf("%s: web %+v, want no override", what, c)
		}
		if got := answer(); got != "192.0.2.20" {
			t.Errorf("%s: answer %s, want the primary still", what, got)
		}
	}

	code, body := httpDo(t, http.MethodPost, ov, "", "unhealthy")
	if code != http.StatusUnauthorized || !strings.Contains(body, "bearer token") {
		t.Errorf("no token: %d %s, want 401", code, body)
	}
	unchanged("after a request without a token")
	code, body = httpDo(t, http.MethodPost, ov, "wrong-token-of-enough-length", "unhealthy")
	if code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d %s, want 401", code, body)
	}
	unchanged("after a request with a wrong token")
	req, _ := http.NewRequest(http.MethodPost, ov, strings.NewReader("unhealthy"))
	req.Header.Set("Authorization", "Basic "+apiToken)
	if resp, err := httpClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("token in a Basic header: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	unchanged("after a Basic authorization")
	if code, _ := httpDo(t, http.MethodPost, ov, apiToken, "sideways"); code != http.StatusBadRequest {
		t.Errorf("bad state: %d, want 400", code)
	}
	if code, _ := httpDo(t, http.MethodPost, f.base+"/v1/checks/nope/override", apiToken, "unhealthy"); code != http.StatusNotFound {
		t.Errorf("unknown check: %d, want 404", code)
	}
	unchanged("after refused requests")

	// Accepted: the very next query fails over, no waiting for a probe.
	if code, body := httpDo(t, http.MethodPost, ov, apiToken, "unhealthy"); code != http.StatusOK {
		t.Fatalf("override: %d %s", code, body)
	}
	if got := answer(); got != "198.51.100.20" {
		t.Errorf("next query after the override: %s, want the secondary", got)
	}
	c := apiChecks(t, f.base)["web"]
	if c.Override == nil || *c.Override || c.Healthy || c.Probed == nil || !*c.Probed {
		t.Errorf("web overridden: %+v, want override=false healthy=false probed_healthy=true", c)
	}
	_, page := httpDo(t, http.MethodGet, f.base+"/", "", "")
	for _, want := range []string{`<tr id="check-web" class="check is-bad" data-health="unhealthy"`,
		`<a href="#check-web">web</a>: forced unhealthy by an operator; probes say healthy`} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %s", want)
		}
	}

	// Reload (SIGUSR1) with a new TTL: the new instance keeps the override.
	f.srv.Reload(t, f.corefile(f.tokenLine, 7))
	f.srv.WaitFor(t, "api.example.org", dns.TypeA, 15*time.Second, "reload to ttl 7", func(m *dns.Msg) bool {
		return len(m.Answer) > 0 && m.Answer[0].Header().Ttl == 7
	})
	if got := answer(); got != "198.51.100.20" {
		t.Errorf("after reload: %s, want the secondary (override kept)", got)
	}
	if c := apiChecks(t, f.base)["web"]; c.Override == nil || *c.Override {
		t.Errorf("after reload: web %+v, want the override kept", c)
	}

	// healthy forces the other way, also form-encoded; none gives the check back.
	if code, body := httpDo(t, http.MethodPost, ov+"?state=healthy", apiToken, ""); code != http.StatusOK {
		t.Fatalf("override healthy: %d %s", code, body)
	}
	f.web.ok.Store(false)
	waitUntil(t, 10*time.Second, "web probes fail", func() bool {
		c := apiChecks(t, f.base)["web"]
		return c.Probed != nil && !*c.Probed
	}, func() string { _, b := httpDo(t, "GET", f.base+"/v1/checks", "", ""); return b })
	if got := answer(); got != "192.0.2.20" {
		t.Errorf("forced healthy with failing probes: %s, want the primary", got)
	}
	if code, body := httpDo(t, http.MethodPost, ov, apiToken, "none"); code != http.StatusOK {
		t.Fatalf("override none: %d %s", code, body)
	}
	if got := answer(); got != "198.51.100.20" {
		t.Errorf("override removed, probes failing: %s, want the secondary", got)
	}
	if c := apiChecks(t, f.base)["web"]; c.Override != nil || c.Healthy {
		t.Errorf("override removed: %+v", c)
	}
	f.web.ok.Store(true)
	f.srv.WaitFor(t, "api.example.org", dns.TypeA, 10*time.Second, "web recovers", func(m *dns.Msg) bool { return firstA(m) == "192.0.2.20" })

	// Reloaded without token_file: overrides are refused with 403 and change nothing.
	f.srv.Reload(t, f.corefile("", 9))
	f.srv.WaitFor(t, "api.example.org", dns.TypeA, 15*time.Second, "reload to ttl 9", func(m *dns.Msg) bool {
		return len(m.Answer) > 0 && m.Answer[0].Header().Ttl == 9
	})
	if code, body := httpDo(t, http.MethodPost, ov, apiToken, "unhealthy"); code != http.StatusForbidden || !strings.Contains(body, "no token_file") {
		t.Errorf("without token_file: %d %s, want 403", code, body)
	}
	unchanged("after a refused request without token_file")
}
