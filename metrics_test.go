package healthroute

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/internal/coretest"
)

const metricPrefix = coretest.MetricPrefix

// lintFamilies lints the healthroute metric families (coretest.LintFamilies).
var lintFamilies = coretest.LintFamilies

// TestMetricsLint lints every metric of the package, each vector given one series.
func TestMetricsLint(t *testing.T) {
	spec := &health.Spec{Name: "lint-check"}
	probeObserver{}.Probed(spec, nil, time.Millisecond)
	probeObserver{}.Probed(spec, errors.New("refused"), time.Millisecond)
	probeObserver{}.Changed(spec, true)
	checkHealthy.WithLabelValues(spec.Name).Set(1)
	answersTotal.extraSeries("dns://:53", "example.org.", "www.example.org.", "lint").Add(1)
	lastResortTotal.extraSeries("dns://:53", "example.org.", "www.example.org.").Add(1)
	t.Cleanup(func() {
		checkHealthy.DeleteLabelValues(spec.Name)
		probesTotal.DeleteLabelValues(spec.Name, "pass")
		probesTotal.DeleteLabelValues(spec.Name, "fail")
		probeDuration.DeleteLabelValues(spec.Name)
		transitionsTotal.DeleteLabelValues(spec.Name, "unhealthy")
		answersTotal.delete("dns://:53", "example.org.", "www.example.org.", "lint")
		lastResortTotal.delete("dns://:53", "example.org.", "www.example.org.")
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

// gatheredCounter is the value of the named healthroute counter series whose labels
// include want, as a scrape of the default registry shows it (0 when absent).
func gatheredCounter(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range fams {
		if mf.GetName() != metricPrefix+name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestAnswerCounters counts answers per member, per multivalue set and in the last
// resort through ServeDNS, and exports them under their server, zone and record.
func TestAnswerCounters(t *testing.T) {
	h := testHandler(t, `healthroute {
		check down tcp 127.0.0.1:9
		record cnt-one.example.org. weighted {
			weight 10 A 192.0.2.1 id only
		}
		record cnt-mv.example.org. multivalue {
			value A 192.0.2.2 id a
			value A 192.0.2.3 id b
		}
		record cnt-resort.example.org. failover {
			primary A 192.0.2.4 check down id p
		}
	}`)
	h.resolver.Publish(snapshot(h.cfg, "down"))
	server := "dns://127.0.0.1:5300"
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: server})
	ask := func(name string, times int) {
		for range times {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			if _, err := h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	ask("cnt-one.example.org.", 3)
	ask("cnt-mv.example.org.", 2)
	ask("cnt-resort.example.org.", 4)
	for _, tc := range []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"answers_total", map[string]string{"server": server, "zone": "example.org.", "record": "cnt-one.example.org.", "member": "only"}, 3},
		{"answers_total", map[string]string{"server": server, "record": "cnt-mv.example.org.", "member": "multivalue"}, 2},
		{"answers_total", map[string]string{"server": server, "record": "cnt-resort.example.org.", "member": "p"}, 4},
		{"last_resort_answers_total", map[string]string{"server": server, "zone": "example.org.", "record": "cnt-resort.example.org."}, 4},
		{"last_resort_answers_total", map[string]string{"server": server, "record": "cnt-one.example.org."}, 0},
	} {
		if got := gatheredCounter(t, tc.metric, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
		}
	}
}

// delete drops the series of labels, for tests that create series of their own.
func (f *answerFamily) delete(labels ...string) {
	var key [4]string
	copy(key[:], labels)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.extra, key)
}
