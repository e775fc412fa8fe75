package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
)

// 1,000 checks whose targets hang plus 10 whose targets refuse at once, with the
// bound on probes in flight users get (no max_probes): the 10 go down within
// interval × threshold + timeout + 1 s and no probe waits for a slot. Then a
// reload sets max_probes 50, far below what the hung checks need: the new bound
// applies, checks wait, and the backlog and the log show it.
//
// The interval (3 s) and timeout (1 s) are shorter than the defaults so the test
// takes seconds; the health package's TestSchedulerHungTargetsDoNotStarveOthers
// runs the same configuration at the defaults (30 s, 10 s) in fake time.
func TestProbingHungTargetsDoNotStarveOthers(t *testing.T) {
	const (
		hung      = 1000
		failing   = 10
		interval  = 3 * time.Second
		timeout   = time.Second
		threshold = 3
	)
	hungAddr, refused := probingHungListener(t), coretest.ClosedPort(t)
	var checks strings.Builder
	for i := range hung {
		fmt.Fprintf(&checks, "\t\tcheck hung-%d http http://%s/%d {\n\t\t\tinterval %s\n\t\t\ttimeout %s\n\t\t}\n", i, hungAddr, i, interval, timeout)
	}
	for i := range failing {
		fmt.Fprintf(&checks, "\t\tcheck fail-%d http http://%s/%d {\n\t\t\tinterval %s\n\t\t\ttimeout %s\n\t\t}\n", i, refused, i, interval, timeout)
	}
	port, metricsPort := coretest.FreePort(t), coretest.FreePort(t)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	corefile := func(extra string) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
%s%s
		record www.example.org. failover {
			primary   A 192.0.2.1 check fail-0
			secondary A 198.51.100.1
		}
	}
}`, port, metricsPort, checks.String(), extra)
	}
	coretest.Binary(t) // built before the clock starts
	t0 := time.Now()
	srv := coretest.Start(t, corefile(""), port, "www.example.org")
	started := time.Since(t0)

	bound := interval*threshold + timeout + time.Second
	m, seen := probingWaitMetricsAt(t, metrics, bound+10*time.Second, "the refusing checks go down", func(m map[string]*dto.MetricFamily) bool {
		for i := range failing {
			if probingMetric(m, "check_transitions_total", "check", fmt.Sprintf("fail-%d", i), "to", "unhealthy") < 1 {
				return false
			}
		}
		return true
	})
	took := seen.Sub(t0)
	var maxLag float64
	lags := m[metricPrefix+"probe_lag_seconds"].GetMetric()
	for _, s := range lags {
		maxLag = max(maxLag, s.GetGauge().GetValue())
	}
	t.Logf("%d hung + %d refusing checks, max_probes %v: all refusing down %s after start (process up after %s; bound %s); max lag of %d checks %.3fs; backlog %v",
		hung, failing, probingMetric(m, "max_probes"), took.Round(time.Millisecond), started.Round(time.Millisecond), bound, len(lags), maxLag, probingMetric(m, "probe_backlog"))
	if took > bound {
		t.Errorf("refusing checks down %s after the process started; want within %s", took, bound)
	}
	if maxLag >= 1 {
		t.Errorf("a probe started %.3fs after its due time; want no waiting for slots", maxLag)
	}
	// The hung ones go down too, each of their probes taking its whole budget.
	hungBound := (interval+timeout)*threshold + time.Second
	_, hungSeen := probingWaitMetricsAt(t, metrics, hungBound+10*time.Second, "the hung checks go down", func(m map[string]*dto.MetricFamily) bool {
		return probingMetric(m, "check_transitions_total", "to", "unhealthy") >= hung+failing
	})
	hungTook := hungSeen.Sub(t0)
	t.Logf("all %d hung checks down %s after start (bound %s)", hung, hungTook.Round(time.Millisecond), hungBound)
	// Seen by scraping 1010 checks' metrics, which takes up to a second or two on a
	// loaded machine; the bound above is (interval + timeout) × threshold + 1 s.
	if hungTook > hungBound+2*time.Second {
		t.Errorf("hung checks down %s after the process started; want within %s", hungTook, hungBound)
	}
	if got := srv.Query(t, "www.example.org", dns.TypeA); len(got.Answer) != 1 || got.Answer[0].(*dns.A).A.String() != "198.51.100.1" {
		t.Errorf("www answered %v; want the secondary, its primary's check down", got.Answer)
	}

	srv.Reload(t, corefile("\t\tmax_probes 50\n"))
	probingWaitMetrics(t, metrics, 15*time.Second, "max_probes 50 applies on reload", func(m map[string]*dto.MetricFamily) bool {
		return probingMetric(m, "max_probes") == 50
	})
	m = probingWaitMetrics(t, metrics, 2*interval+5*time.Second, "checks wait for slots under max_probes 50", func(m map[string]*dto.MetricFamily) bool {
		return probingMetric(m, "probe_backlog") > 0 && probingMetric(m, "probe_backlog_wait_seconds") > 0
	})
	t.Logf("max_probes 50: backlog %v, the longest waiting for %.3fs", probingMetric(m, "probe_backlog"), probingMetric(m, "probe_backlog_wait_seconds"))
	probingWaitOutput(t, srv.Output, "probes started late", 2*interval+5*time.Second)
	if !strings.Contains(srv.Output(), "below the") {
		t.Errorf("no warning that max_probes 50 is below what the checks need:\n%s", srv.Output())
	}
}
