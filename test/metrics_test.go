package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestMetricsEndToEnd runs the real CoreDNS binary with the prometheus plugin and a
// check against a real HTTP endpoint, scrapes the real metrics endpoint, fails the
// endpoint and watches the values move.
func TestMetricsEndToEnd(t *testing.T) {
	web := newFlipServer(t, false)
	port, mport := coretest.FreePort(t), coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		check web http %s/health {
			interval 100ms
			failure_threshold 2
			recovery_threshold 2
		}
		record www.example.org. failover {
			primary   A 192.0.2.10 check web id east
			secondary A 198.51.100.10 id west
		}
		record solo.example.org. weighted {
			weight 10 A 192.0.2.20 check web id solo-a
		}
	}
}
`, port, mport, web.URL)
	srv := coretest.Start(t, corefile, port, "www.example.org")
	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	web1 := map[string]string{"check": "web"}
	read := func(name string, labels map[string]string) float64 {
		fams, _ := scrape(t, murl)
		return metricValue(fams, metricPrefix+name, labels)
	}
	dump := func() string { _, body := scrape(t, murl); return body + "\n" + srv.Output() }

	// Healthy: the first probes pass and answers come from the primary.
	waitUntil(t, 10*time.Second, "probes_total{check=web,result=pass} > 0", func() bool {
		return read("probes_total", map[string]string{"check": "web", "result": "pass"}) > 0
	}, dump)
	if v := read("check_healthy", web1); v != 1 {
		t.Fatalf("check_healthy{check=web} = %v with a passing endpoint, want 1\n%s", v, dump())
	}
	for range 3 {
		if got := firstA(srv.Query(t, "www.example.org", dns.TypeA)); got != "192.0.2.10" {
			t.Fatalf("www: %s, want the primary", got)
		}
	}
	fams, _ := scrape(t, murl)
	east := map[string]string{"record": "www.example.org.", "member": "east", "zone": "example.org."}
	if v := metricValue(fams, metricPrefix+"answers_total", east); v < 3 {
		t.Errorf("answers_total{member=east} = %v after 3 answers, want >= 3\n%s", v, series(fams, metricPrefix+"answers_total"))
	}
	if v := metricValue(fams, metricPrefix+"probe_duration_seconds", web1); v < 1 {
		t.Errorf("probe_duration_seconds{check=web} has %v observations, want >= 1", v)
	}
	if v := metricValue(fams, metricPrefix+"table_publications_total", nil); v < 1 {
		t.Errorf("table_publications_total = %v, want >= 1", v)
	}
	if v := metricValue(fams, metricPrefix+"table_compile_duration_seconds", nil); v < 1 {
		t.Errorf("table_compile_duration_seconds has %v observations, want >= 1", v)
	}
	if _, ok := fams[metricPrefix+"probes_in_flight"]; !ok {
		t.Error("probes_in_flight is not exported")
	}
	// Query-path series carry the server first, as CoreDNS's own do.
	if v := metricValue(fams, metricPrefix+"answers_total", map[string]string{"server": fmt.Sprintf("dns://127.0.0.1:%d", port)}); v < 3 {
		t.Errorf("answers_total{server=dns://127.0.0.1:%d} = %v, want >= 3\n%s", port, v, series(fams, metricPrefix+"answers_total"))
	}
	failsBefore := read("probes_total", map[string]string{"check": "web", "result": "fail"})
	downBefore := read("check_transitions_total", map[string]string{"check": "web", "to": "unhealthy"})
	resortBefore := read("last_resort_answers_total", map[string]string{"record": "solo.example.org."})

	// The endpoint fails: the gauge drops after failure_threshold failed probes.
	web.ok.Store(false)
	waitUntil(t, 10*time.Second, "check_healthy{check=web} 1 -> 0", func() bool { return read("check_healthy", web1) == 0 }, dump)
	if v := read("probes_total", map[string]string{"check": "web", "result": "fail"}); v < failsBefore+2 {
		t.Errorf("probes_total{result=fail} = %v, want >= %v (failure_threshold 2)", v, failsBefore+2)
	}
	if v := read("check_transitions_total", map[string]string{"check": "web", "to": "unhealthy"}); v < downBefore+1 {
		t.Errorf("check_transitions_total{to=unhealthy} = %v, want > %v", v, downBefore)
	}

	// Failed over: answers now count against the secondary; the lone member of solo
	// answers in its last resort.
	srv.WaitFor(t, "www.example.org", dns.TypeA, 5*time.Second, "www fails over", func(m *dns.Msg) bool { return firstA(m) == "198.51.100.10" })
	for range 2 {
		if got := firstA(srv.Query(t, "solo.example.org", dns.TypeA)); got != "192.0.2.20" {
			t.Fatalf("solo: %q, want its only member as the last resort", got)
		}
	}
	fams, _ = scrape(t, murl)
	if v := metricValue(fams, metricPrefix+"answers_total", map[string]string{"record": "www.example.org.", "member": "west"}); v < 1 {
		t.Errorf("answers_total{member=west} = %v after failing over, want >= 1\n%s", v, series(fams, metricPrefix+"answers_total"))
	}
	if v := metricValue(fams, metricPrefix+"last_resort_answers_total", map[string]string{"record": "solo.example.org.", "zone": "example.org."}); v < resortBefore+2 {
		t.Errorf("last_resort_answers_total{record=solo} = %v, want >= %v\n%s", v, resortBefore+2, series(fams, metricPrefix+"last_resort_answers_total"))
	}
	if v := metricValue(fams, metricPrefix+"last_resort_answers_total", map[string]string{"record": "www.example.org."}); v != 0 {
		t.Errorf("last_resort_answers_total{record=www} = %v: www has a healthy secondary", v)
	}

	// Recovery: back to 1, with a transition to healthy.
	web.ok.Store(true)
	waitUntil(t, 10*time.Second, "check_healthy{check=web} 0 -> 1", func() bool { return read("check_healthy", web1) == 1 }, dump)
	if v := read("check_transitions_total", map[string]string{"check": "web", "to": "healthy"}); v < 1 {
		t.Errorf("check_transitions_total{to=healthy} = %v after recovery, want >= 1", v)
	}

	// The exported families pass promlint, as scraped.
	fams, _ = scrape(t, murl)
	var list []*dto.MetricFamily
	for _, mf := range fams {
		list = append(list, mf)
	}
	lintFamilies(t, list)
}
