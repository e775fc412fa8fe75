package healthroute

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/health"
)

const metricPrefix = "coredns_healthroute_"

// lintFamilies lints the healthroute families of fams and fails on any problem.
func lintFamilies(t *testing.T, fams []*dto.MetricFamily) {
	t.Helper()
	var ours []*dto.MetricFamily
	for _, mf := range fams {
		if strings.HasPrefix(mf.GetName(), metricPrefix) {
			ours = append(ours, mf)
		}
	}
	if len(ours) == 0 {
		t.Fatal("no coredns_healthroute_ families to lint")
	}
	problems, err := promlint.NewWithMetricFamilies(ours).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestMetricsLint lints every metric of the package, each vector given one series.
func TestMetricsLint(t *testing.T) {
	spec := &health.Spec{Name: "lint-check"}
	probeObserver{}.Probed(spec, nil, time.Millisecond)
	probeObserver{}.Probed(spec, errors.New("refused"), time.Millisecond)
	probeObserver{}.Changed(spec, true)
	checkHealthy.WithLabelValues(spec.Name).Set(1)
	answersTotal.WithLabelValues("dns://:53", "example.org.", "www.example.org.", "lint").Inc()
	lastResortTotal.WithLabelValues("dns://:53", "example.org.", "www.example.org.").Inc()
	t.Cleanup(func() {
		checkHealthy.DeleteLabelValues(spec.Name)
		probesTotal.DeleteLabelValues(spec.Name, "pass")
		probesTotal.DeleteLabelValues(spec.Name, "fail")
		probeDuration.DeleteLabelValues(spec.Name)
		transitionsTotal.DeleteLabelValues(spec.Name, "unhealthy")
		answersTotal.DeleteLabelValues("dns://:53", "example.org.", "www.example.org.", "lint")
		lastResortTotal.DeleteLabelValues("dns://:53", "example.org.", "www.example.org.")
	})
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	lintFamilies(t, fams)
	want := []string{"check_healthy", "probes_total", "probe_duration_seconds", "check_transitions_total",
		"probes_in_flight", "answers_total", "last_resort_answers_total", "table_publications_total",
		"table_compile_duration_seconds"}
	have := map[string]bool{}
	for _, mf := range fams {
		have[mf.GetName()] = true
	}
	for _, n := range want {
		if !have[metricPrefix+n] {
			t.Errorf("%s%s is not registered with the default registry", metricPrefix, n)
		}
	}
}
