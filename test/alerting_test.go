package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
)

// The test's Prometheus scrapes every second and evaluates rules every 200 ms, and
// its copy of the rules sets every `for` to 2 s: at the shipped durations (minutes)
// the test would take that long. The rules at their shipped durations are checked
// by TestAlertingRules (promtool's unit tests, on simulated time).
const (
	alertScrape   = time.Second
	alertEvaluate = 200 * time.Millisecond
	alertFor      = 2 * time.Second
)

// TestAlertsAndDashboardOnRealPrometheus runs a real CoreDNS with healthroute (its
// checks against real HTTP and HTTPS servers, a one-member fleet), a real Prometheus
// scraping it with the repository's rules, and a real Alertmanager, all on loopback.
// A check made to fail fires HealthrouteCheckDown at Alertmanager within the rule's
// `for` plus two scrape intervals of the check turning unhealthy, and its record group
// with no other member fires HealthrouteRecordFailingOpen; every query of the
// repository's Grafana dashboard returns data; when the check heals, both resolve.
func TestAlertsAndDashboardOnRealPrometheus(t *testing.T) {
	web, secure := newFlipServer(t, false), newFlipServer(t, true)
	port, mport, gport := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		fleet {
			bind 127.0.0.1:%d
			name dns1
			insecure
		}
		%s
		check secure https %s/ {
			interval 100ms
			failure_threshold 1
			measure_latency
		}
		record www.example.org. failover {
			primary   A 192.0.2.10 check web id east
			secondary A 198.51.100.10 check secure id west
		}
		record solo.example.org. weighted {
			weight 10 A 192.0.2.20 check web id solo-a
		}
	}
}
`, port, mport, gport, fastCheck("web", web.URL+"/"), secure.URL)
	srv := coretest.Start(t, corefile, port, "www.example.org")
	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)

	prom, am, stackLogs := startAlertingStack(t, mport)
	logs := func() string { return stackLogs() + "\ncoredns:\n" + outputTail(srv.Output()) }

	queryN := func(n int) {
		for range n {
			srv.Query(t, "www.example.org", dns.TypeA)
			srv.Query(t, "solo.example.org", dns.TypeA)
		}
	}
	queryN(5)
	waitUntil(t, 30*time.Second, "Prometheus to scrape check_healthy{check=web} == 1", func() bool {
		r, err := promQuery(prom, `coredns_healthroute_check_healthy{check="web"} == 1`)
		return err == nil && len(r) == 1
	}, logs)

	// The check fails: t0 is when healthroute's own metrics first say so.
	web.ok.Store(false)
	probingWaitMetrics(t, murl, 10*time.Second, "check_healthy{check=web} == 0", func(f map[string]*dto.MetricFamily) bool {
		return probingMetric(f, "check_healthy", "check", "web") == 0 && f[metricPrefix+"check_healthy"] != nil
	})
	t0 := time.Now()
	queryN(5) // last-resort answers for solo
	bound := alertFor + 2*alertScrape
	waitUntil(t, 30*time.Second, "HealthrouteCheckDown{check=web} active at Alertmanager", func() bool {
		return len(amActive(t, am, "HealthrouteCheckDown", map[string]string{"check": "web"})) == 1
	}, logs)
	fired := time.Since(t0)
	t.Logf("HealthrouteCheckDown reached Alertmanager %v after the check turned unhealthy (for %v, scrape %v: bound %v)", fired.Round(time.Millisecond), alertFor, alertScrape, bound)
	if fired > bound {
		t.Errorf("HealthrouteCheckDown reached Alertmanager after %v, want within for + two scrape intervals, %v", fired, bound)
	}
	if a := amActive(t, am, "HealthrouteCheckDown", map[string]string{"check": "secure"}); len(a) != 0 {
		t.Errorf("HealthrouteCheckDown fired for the healthy check secure: %v", a)
	}
	waitUntil(t, 30*time.Second, "HealthrouteRecordFailingOpen{record=solo.example.org.} active at Alertmanager", func() bool {
		return len(amActive(t, am, "HealthrouteRecordFailingOpen", map[string]string{"record": "solo.example.org.", "type": "A", "policy": "weighted"})) == 1
	}, logs)
	if a := amActive(t, am, "HealthrouteRecordFailingOpen", map[string]string{"record": "www.example.org."}); len(a) != 0 {
		t.Errorf("www.example.org. has a healthy member (west) but HealthrouteRecordFailingOpen fired: %v", a)
	}

	dashboardQueriesAnswer(t, prom, logs)

	// It heals: both alerts resolve.
	web.ok.Store(true)
	healed := time.Now()
	waitUntil(t, 30*time.Second, "HealthrouteCheckDown and HealthrouteRecordFailingOpen resolved at Alertmanager", func() bool {
		return len(amActive(t, am, "HealthrouteCheckDown", nil)) == 0 && len(amActive(t, am, "HealthrouteRecordFailingOpen", nil)) == 0
	}, logs)
	t.Logf("both alerts resolved %v after the endpoint healed", time.Since(healed).Round(time.Millisecond))
}

// startAlertingStack starts Alertmanager and a Prometheus that scrapes the metrics
// on 127.0.0.1:mport with the repository's rules (every `for` set to alertFor) and
// sends its alerts to that Alertmanager; it returns their base URLs and a function
// giving their recent output.
func startAlertingStack(t *testing.T, mport int) (prom, am string, logs func() string) {
	t.Helper()
	dir := t.TempDir()
	amPort := coretest.FreePort(t)
	am = fmt.Sprintf("http://127.0.0.1:%d", amPort)
	writeConf(t, filepath.Join(dir, "alertmanager.yml"), "route:\n  receiver: nobody\n  group_wait: 1s\nreceivers:\n  - name: nobody\n")
	amProc := startDaemon(t, dir, am+"/-/ready", "prometheus-alertmanager",
		"--config.file=alertmanager.yml", "--storage.path="+filepath.Join(dir, "am"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", amPort),
		"--cluster.listen-address=") // no cluster listener (it would bind every address)

	var promProc *zonesProc
	prom, promProc = startPrometheus(t, dir, mport, alertFor, fmt.Sprintf(`
alerting:
  alertmanagers:
    - api_version: v2
      static_configs: [{targets: ["127.0.0.1:%d"]}]`, amPort))
	return prom, am, func() string {
		return "prometheus:\n" + outputTail(promProc.output()) + "\nalertmanager:\n" + outputTail(amProc.output())
	}
}

// startPrometheus starts Prometheus in dir scraping the metrics on 127.0.0.1:mport
// every alertScrape with the repository's rules, every `for` set to forDur, and
// extra appended to its configuration; it returns its base URL and process.
func startPrometheus(t *testing.T, dir string, mport int, forDur time.Duration, extra string) (string, *zonesProc) {
	t.Helper()
	promPort := coretest.FreePort(t)
	prom := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	rules, err := os.ReadFile("../deploy/prometheus/healthroute.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	short := regexp.MustCompile(`(?m)^(\s+for:) .*$`).ReplaceAll(rules, []byte("${1} "+forDur.String()))
	writeConf(t, filepath.Join(dir, "rules.yml"), string(short))
	writeConf(t, filepath.Join(dir, "prometheus.yml"), fmt.Sprintf(`global:
  scrape_interval: %s
  evaluation_interval: %s
rule_files: [rules.yml]
scrape_configs:
  - job_name: coredns
    static_configs: [{targets: ["127.0.0.1:%d"]}]
`, alertScrape, alertEvaluate, mport)+extra+"\n")
	proc := startDaemon(t, dir, prom+"/-/ready", "prometheus",
		"--config.file=prometheus.yml", "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	return prom, proc
}

// dashboardQueriesAnswer runs every query of the repository's Grafana dashboard
// (panels and the instance variable) against prom, with Grafana's variables set as
// the dashboard's "All" would, until each returns data.
func dashboardQueriesAnswer(t *testing.T, prom string, logs func() string) {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/healthroute.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/healthroute.json: %v", err)
	}
	vars := strings.NewReplacer("$instance", ".+", "$__rate_interval", "10s", "$__range", "5m")
	queries := map[string]string{} // expr -> panel
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries[vars.Replace(tg.Expr)] = p.Title
		}
	}
	for _, v := range dash.Templating.List {
		// label_values(METRIC, LABEL) is Grafana's; Prometheus answers METRIC.
		m := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`).FindStringSubmatch(v.Definition)
		if m == nil {
			t.Fatalf("variable %s: %q is not label_values(METRIC, LABEL)", v.Name, v.Definition)
		}
		queries[m[1]] = "variable " + v.Name
	}
	if len(queries) < 15 {
		t.Fatalf("the dashboard has %d distinct queries, want at least 15", len(queries))
	}
	empty := func() []string {
		var out []string
		for q, panel := range queries {
			r, err := promQuery(prom, q)
			if err != nil || len(r) == 0 {
				out = append(out, fmt.Sprintf("%s: %s (%v)", panel, q, err))
			}
		}
		return out
	}
	waitUntil(t, 30*time.Second, fmt.Sprintf("all %d dashboard queries to return data", len(queries)), func() bool { return len(empty()) == 0 },
		func() string { return strings.Join(empty(), "\n") + "\n" + logs() })
	t.Logf("%d dashboard queries return data", len(queries))
}

// writeConf writes content to path.
func writeConf(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// outputTail is the last 3000 bytes of s.
func outputTail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}
