package test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// TestEndToEndFleet runs two real CoreDNS processes in one fleet. The endpoint
// answers each checker by the name in its User-Agent, so the two members see it
// differently: one healthy report of two is more than 18%, so both answer with the
// primary; when neither sees it healthy, both fail over.
func TestEndToEndFleet(t *testing.T) {
	var mu sync.Mutex
	up := map[string]bool{"dns-a": false, "dns-b": true}
	agents := map[string]bool{}
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua := r.Header.Get("User-Agent")
		mu.Lock()
		agents[ua] = true
		ok := false
		for name, healthy := range up {
			if strings.HasSuffix(ua, "(checker "+name+")") {
				ok = healthy
			}
		}
		mu.Unlock()
		if !ok {
			http.Error(w, "down for you", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	}))
	t.Cleanup(endpoint.Close)

	key := make([]byte, 32)
	rand.Read(key)
	keyFile := coretest.WriteFile(t, "gossip.key", base64.StdEncoding.EncodeToString(key)+"\n")
	gossipA, gossipB := coretest.FreePort(t), coretest.FreePort(t)
	corefile := func(name string, port, api, bind, join int) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d
		fleet {
			bind 127.0.0.1:%d
			join 127.0.0.1:%d
			name %s
			key_file %s
		}
		check web http %s/ {
			interval 200ms
			failure_threshold 1
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
	}
}`, port, api, bind, join, name, keyFile, endpoint.URL)
	}
	portA, portB, apiA, apiB := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	a := coretest.Start(t, corefile("dns-a", portA, apiA, gossipA, gossipB), portA, "www.example.org")
	b := coretest.Start(t, corefile("dns-b", portB, apiB, gossipB, gossipA), portB, "www.example.org")

	// Both members counted in the view, one healthy: healthy everywhere.
	fleetOf := func(api int) *view.Fleet {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/checks", api))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var v struct{ Checks []view.Check }
		if json.NewDecoder(resp.Body).Decode(&v) != nil || len(v.Checks) != 1 {
			return nil
		}
		return v.Checks[0].Fleet
	}
	var fa *view.Fleet
	waitUntil(t, 20*time.Second, "dns-a counts both members, one healthy",
		func() bool { fa = fleetOf(apiA); return fa != nil && fa.Total == 2 && fa.Healthy == 1 },
		func() string { return fmt.Sprintf("last view %+v\n%s", fa, a.Output()) })
	if !strings.Contains(fa.Decision, "1 of 2 reachable checkers healthy, more than 18%: healthy") {
		t.Errorf("decision %q", fa.Decision)
	}
	is := func(want string) func(*dns.Msg) bool { return func(m *dns.Msg) bool { return firstA(m) == want } }
	for _, s := range []*coretest.Server{a, b} {
		s.WaitFor(t, "www.example.org", dns.TypeA, 10*time.Second, "primary by quorum", is("192.0.2.1"))
	}
	mu.Lock()
	if !agents["healthroute/"+health.Version+" (checker dns-a)"] || !agents["healthroute/"+health.Version+" (checker dns-b)"] {
		t.Errorf("probes did not name their checker: saw User-Agents %v", agents)
	}
	up["dns-b"] = false
	mu.Unlock()
	for _, s := range []*coretest.Server{a, b} {
		s.WaitFor(t, "www.example.org", dns.TypeA, 10*time.Second, "fails over when no checker sees it healthy", is("198.51.100.1"))
	}
	if fb := fleetOf(apiB); fb == nil || fb.Healthy != 0 || fb.Total != 2 || len(fb.Members) != 2 {
		t.Errorf("dns-b's view after both failed: %+v", fb)
	}
}
