package test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// promAlerts returns Prometheus's pending and firing alerts as "name{check=...} state".
func promAlerts(t *testing.T, prom string) []string {
	t.Helper()
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/alerts", &body)
	var out []string
	for _, a := range body.Data.Alerts {
		out = append(out, fmt.Sprintf("%s{check=%q} %s", a.Labels["alertname"], a.Labels["check"], a.State))
	}
	sort.Strings(out)
	return out
}

// rulesEvaluatedAfter says whether Prometheus has evaluated every rule group since at.
func rulesEvaluatedAfter(t *testing.T, prom string, at time.Time) bool {
	t.Helper()
	var body struct {
		Data struct {
			Groups []struct {
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/rules", &body)
	for _, g := range body.Data.Groups {
		if !g.LastEvaluation.After(at) {
			return false
		}
	}
	return len(body.Data.Groups) > 0
}

// TestAlertsQuietOnHealthyServerWithoutFleetOrControls runs a real CoreDNS with a
// healthroute block without fleet or controls and a real Prometheus scraping it
// with the shipped rules, every `for` set to 0 (so anything that would page at
// some point fires at once). While the check is healthy no alert is pending or
// firing; when it fails, exactly its HealthrouteCheckDown fires (its record group
// has a healthy secondary, so nothing fails open), and the dashboard's "what
// failing checks take out" table, an instant query, lists that check's group and
// nothing else. Every dashboard query is one Prometheus accepts.
func TestAlertsQuietOnHealthyServerWithoutFleetOrControls(t *testing.T) {
	web := newFlipServer(t, false)
	port, mport := coretest.FreePort(t), coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		%s
		record www.example.org. failover {
			primary   A 192.0.2.10 check web
			secondary A 198.51.100.10
		}
	}
}
`, port, mport, fastCheck("web", web.URL+"/"))
	srv := coretest.Start(t, corefile, port, "www.example.org")
	prom, promProc := startPrometheus(t, t.TempDir(), mport, 0, "")
	logs := func() string {
		return "prometheus:\n" + outputTail(promProc.output()) + "\ncoredns:\n" + outputTail(srv.Output())
	}

	// Healthy: three scrapes (counters' increase() needs two), then a full round
	// of rule evaluations after them.
	waitUntil(t, 30*time.Second, "three scrapes of a healthy check", func() bool {
		r, err := promQuery(prom, `count_over_time(coredns_healthroute_check_healthy{check="web"}[1m]) >= 3 and on () (min_over_time(coredns_healthroute_check_healthy{check="web"}[1m]) == 1)`)
		return err == nil && len(r) == 1
	}, logs)
	scraped := time.Now()
	waitUntil(t, 10*time.Second, "a rule evaluation after the scrapes", func() bool { return rulesEvaluatedAfter(t, prom, scraped) }, logs)
	if a := promAlerts(t, prom); len(a) != 0 {
		t.Errorf("a healthy server without fleet or controls has alerts pending or firing: %v", a)
	}
	if r, err := promQuery(prom, `{__name__=~"coredns_healthroute_(control|fleet)_.*"}`); err != nil || len(r) != 0 {
		t.Errorf("fleet or control series without fleet or controls: %v (%v)", r, err)
	}
	table := ""
	for _, p := range dashboardPanels(t) {
		for _, tg := range p.Targets {
			q := strings.NewReplacer("$instance", ".+", "$__rate_interval", "10s", "$__range", "5m").Replace(tg.Expr)
			if _, err := promQuery(prom, q); err != nil {
				t.Errorf("dashboard panel %q: Prometheus refuses its query: %v", p.Title, err)
			}
			if p.Type == "table" {
				table = q
			}
		}
	}
	if r, err := promQuery(prom, table); err != nil || len(r) != 0 {
		t.Errorf("the failing-checks table lists %v on a healthy server (%v)", r, err)
	}

	web.ok.Store(false)
	want := []string{`HealthrouteCheckDown{check="web"} firing`}
	waitUntil(t, 30*time.Second, "HealthrouteCheckDown{check=web} firing", func() bool {
		a := promAlerts(t, prom)
		return len(a) == 1 && a[0] == want[0]
	}, func() string { return fmt.Sprint(promAlerts(t, prom)) + "\n" + logs() })
	failed := time.Now()
	waitUntil(t, 10*time.Second, "a rule evaluation after it fired", func() bool { return rulesEvaluatedAfter(t, prom, failed) }, logs)
	if a := promAlerts(t, prom); strings.Join(a, ",") != strings.Join(want, ",") {
		t.Errorf("alerts with the check failing: %v, want only %v", a, want)
	}
	r, err := promQuery(prom, table)
	if err != nil || len(r) != 1 || r[0].Metric["check"] != "web" || r[0].Metric["record"] != "www.example.org." {
		t.Errorf("the failing-checks table lists %v (%v), want web's group www.example.org. only", r, err)
	}
}
