package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestMetricsAnswerOperatorQuestions runs the real CoreDNS with the prometheus plugin
// and checks, on the real metrics endpoint, what an operator's queries need: counters
// of every configured check and record name exist at 0 before their first increment;
// check_record_groups maps each check, children of calculated checks included, to the
// record groups it guards, with their policy; the probe histograms reach 30 s and
// carry the phases; no fleet_* family without a fleet; every record and zone label
// ends in a dot; a failed reload is counted.
func TestMetricsAnswerOperatorQuestions(t *testing.T) {
	web := newFlipServer(t, false)
	port, mport := coretest.FreePort(t), coretest.FreePort(t)
	block := func(extra string) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		%s
		check down tcp 127.0.0.1:1 {
			interval 1h
		}
		check both calculated web down {
			threshold 1
		}
		record www.example.org. failover {
			primary   A 192.0.2.10 check web id east
			secondary A 198.51.100.10 id west
		}
		record api.example.org weighted {
			weight 10 A 192.0.2.20 check both id a
		}
		%s
	}
}
`, port, mport, fmt.Sprintf("check web http %s/ {\n\t\t\tinterval 100ms\n\t\t\tfailure_threshold 1\n\t\t\tmeasure_latency\n\t\t}", web.URL), extra)
	}
	srv := coretest.Start(t, block(""), port, "www.example.org")
	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	// A probe is counted before its phases are observed: wait for both, or a scrape
	// between the two finds no phase series yet.
	f := probingWaitMetrics(t, murl, 10*time.Second, "probes of web and their phases", func(f map[string]*dto.MetricFamily) bool {
		return probingMetric(f, "probes_total", "check", "web", "result", "pass") > 0 &&
			hasSeries(f, metricPrefix+"probe_phase_duration_seconds", "check", "web", "phase", "first_byte")
	})
	exists := func(name string, labels ...string) bool { return hasSeries(f, metricPrefix+name, labels...) }
	for _, s := range [][]string{
		{"probes_total", "check", "web", "result", "fail"},
		{"probes_total", "check", "down", "result", "pass"},
		{"check_transitions_total", "check", "web", "to", "unhealthy"},
		{"check_transitions_total", "check", "web", "to", "healthy"},
		{"probe_local_errors_total", "check", "web"},
		{"last_resort_answers_total", "record", "www.example.org.", "zone", "example.org."},
		{"last_resort_answers_total", "record", "api.example.org.", "zone", "example.org."},
		{"record_groups_failing_open"},
		{"reloads_failed_total"},
		{"check_record_groups", "check", "web", "record", "www.example.org.", "type", "A", "policy", "failover"},
		{"check_record_groups", "check", "both", "record", "api.example.org.", "type", "A", "policy", "weighted"},
		{"check_record_groups", "check", "web", "record", "api.example.org.", "type", "A", "policy", "weighted"},
		{"check_record_groups", "check", "down", "record", "api.example.org.", "type", "A", "policy", "weighted"},
		{"probe_phase_duration_seconds", "check", "web", "phase", "connect"},
		{"probe_phase_duration_seconds", "check", "web", "phase", "first_byte"},
	} {
		if !exists(s[0], s[1:]...) {
			t.Errorf("%s%v is not exported\n%s", s[0], s[1:], series(f, metricPrefix+s[0]))
		}
	}
	if exists("probe_phase_duration_seconds", "phase", "total") {
		t.Error("probe_phase_duration_seconds has a total phase: probe_duration_seconds is the total")
	}
	if exists("check_record_groups", "check", "down", "record", "www.example.org.") {
		t.Errorf("check_record_groups maps down to www.example.org., which it does not guard\n%s", series(f, metricPrefix+"check_record_groups"))
	}
	if v := probingMetric(f, "probes_total", "check", "web", "result", "fail"); v != 0 {
		t.Errorf("probes_total{check=web,result=fail} = %v with a passing endpoint, want 0", v)
	}
	var top float64
	for _, m := range f[metricPrefix+"probe_duration_seconds"].GetMetric() {
		for _, b := range m.GetHistogram().GetBucket() {
			top = max(top, b.GetUpperBound())
		}
	}
	if top < 30 {
		t.Errorf("probe_duration_seconds' largest bucket is %v s, want 30 s: past every default probe timeout", top)
	}
	checkNoFleetDotted(t, f)
	all := make([]*dto.MetricFamily, 0, len(f))
	for _, fam := range f {
		all = append(all, fam)
	}
	lintFamilies(t, all)

	// A reload that fails (a property healthroute does not know) is counted.
	srv.Reload(t, block("no_such_property 1"))
	probingWaitMetrics(t, murl, 15*time.Second, "reloads_failed_total == 1", func(f map[string]*dto.MetricFamily) bool {
		return probingMetric(f, "reloads_failed_total") == 1
	})
}

// hasSeries reports whether family name has a series whose labels include the
// name/value pairs labels.
func hasSeries(f map[string]*dto.MetricFamily, name string, labels ...string) bool {
	want := labelPairs(labels...)
	for _, m := range f[name].GetMetric() {
		if hasLabels(m, want) {
			return true
		}
	}
	return false
}

// checkNoFleetDotted fails the test for a fleet_* family (the server has no fleet)
// and for a record or zone label value without its trailing dot.
func checkNoFleetDotted(t *testing.T, f map[string]*dto.MetricFamily) {
	t.Helper()
	for name, fam := range f {
		if strings.HasPrefix(name, metricPrefix+"fleet_") {
			t.Errorf("%s is exported without a fleet block", name)
		}
		if !strings.HasPrefix(name, metricPrefix) {
			continue
		}
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				if (l.GetName() == "record" || l.GetName() == "zone") && !strings.HasSuffix(l.GetValue(), ".") {
					t.Errorf("%s has %s=%q, without the trailing dot", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}
