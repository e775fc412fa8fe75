package test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// probingWaitMetrics scrapes the metrics endpoint url until cond holds for what
// it exports, failing the test after within; it returns that scrape. A scrape
// that fails (the listener restarting on a reload) counts as cond not holding.
func probingWaitMetrics(t *testing.T, url string, within time.Duration, what string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	fams, _ := probingWaitMetricsAt(t, url, within, what, cond)
	return fams
}

// probingWaitMetricsAt is probingWaitMetrics that also returns when the scrape that
// satisfied cond began: what it saw had happened by then, however long the scrape
// itself took (a scrape of a thousand checks' histograms takes a while on a loaded
// machine).
func probingWaitMetricsAt(t *testing.T, url string, within time.Duration, what string, cond func(map[string]*dto.MetricFamily) bool) (map[string]*dto.MetricFamily, time.Time) {
	t.Helper()
	var fams map[string]*dto.MetricFamily
	var last error
	var began time.Time
	waitUntil(t, within, what, func() bool {
		began = time.Now()
		resp, err := httpClient.Get(url)
		if err != nil {
			last = err
			return false
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, last = p.TextToMetricFamilies(resp.Body)
		return last == nil && cond(fams)
	}, func() string { return fmt.Sprintf("last scrape error: %v", last) })
	return fams, began
}

// probingMetric is the value of the healthroute family name (without the
// coredns_healthroute_ prefix) for the label pairs given, 0 when absent.
func probingMetric(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	return metricValue(fams, metricPrefix+name, labelPairs(labels...))
}

// probingWaitOutput waits until the server's output contains s, failing the test
// after within.
func probingWaitOutput(t *testing.T, output func() string, s string, within time.Duration) {
	t.Helper()
	waitUntil(t, within, "the server logs "+s, func() bool { return strings.Contains(output(), s) }, output)
}

// probingHungListener listens on loopback and never accepts: connections complete
// into its backlog and then hear nothing, so every probe of it hangs until its
// budget ends; once the backlog is full, connecting hangs too.
func probingHungListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}
