package healthroute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

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

// simpleNamesBlock has simple names simple record sets without a check and checked
// failover sets whose primary has a check of its own.
func simpleNamesBlock(simple, checked int) string {
	var b strings.Builder
	b.WriteString("healthroute {\n")
	for i := range checked {
		fmt.Fprintf(&b, "check k%d tcp 127.0.0.1:9\nrecord k%d.example.org. failover {\nprimary A 192.0.2.1 check k%d id p\nsecondary A 192.0.2.2 id s\n}\n", i, i, i)
	}
	for i := range simple {
		fmt.Fprintf(&b, "record s%06d.example.org. simple {\nA 192.0.2.3\n}\n", i)
	}
	b.WriteString("}")
	return b.String()
}

// scrape returns the body of one scrape of the default registry through the CoreDNS
// metrics plugin's own handler, on loopback, uncompressed.
func scrape(t testing.TB) []byte {
	t.Helper()
	m := metrics.New("127.0.0.1:0")
	if err := m.OnStartup(); err != nil {
		t.Fatal(err)
	}
	defer m.OnFinalShutdown()
	req, err := http.NewRequest(http.MethodGet, "http://"+metrics.ListenAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v", resp.Status, err)
	}
	return body
}

// TestScrapeOfSimpleNames: 100,000 simple record sets without a check, a thousand of
// them asked, beside 10 checked ones, all asked: one scrape is at most 1 MB, and holds
// the checked names' answer and last-resort series but none of a simple name's (its
// answer cannot change). Every name had a zero last-resort series before: 12.9 MB.
func TestScrapeOfSimpleNames(t *testing.T) {
	const simple, checked = 100_000, 10
	h := testHandler(t, simpleNamesBlock(simple, checked))
	initCheckSeries(h.cfg)
	t.Cleanup(func() {
		for name := range h.cfg.Checks {
			dropCheckFamilies(name)
		}
	})
	server := "dns://127.0.0.1:5312"
	for i := range checked {
		seriesAsk(t, h, server, fmt.Sprintf("k%d.example.org.", i), dns.TypeA, 1)
	}
	for i := range 1000 {
		seriesAsk(t, h, server, fmt.Sprintf("s%06d.example.org.", i), dns.TypeA, 1)
	}
	body := scrape(t)
	if len(body) > 1<<20 {
		t.Errorf("one scrape is %d bytes, want at most 1 MB", len(body))
	}
	for _, want := range []string{
		`coredns_healthroute_answers_total{member="p",record="k9.example.org.",server="` + server + `",zone="example.org."} 1`,
		`coredns_healthroute_last_resort_answers_total{record="k9.example.org.",server="` + server + `",zone="example.org."} 0`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if bytes.Contains(body, []byte(`record="s000000.example.org."`)) {
		t.Errorf("the scrape has a series of a simple name without a check")
	}
	t.Logf("one scrape: %d bytes", len(body))
}

// checkedScrape sets up a scrape of a block of checks http checks, each guarding the primary of a failover name of its own, after
// each check's first probe (connect and first byte phases measured) and one answer
// on a server (so the names' zero last-resort series exist); measure gives every
// check measure_latency. The check series are dropped at the end of tb.
func checkedScrape(tb testing.TB, checks int, measure bool) {
	var b strings.Builder
	b.WriteString("healthroute {\n")
	opt := ""
	if measure {
		opt = " {\nmeasure_latency\n}"
	}
	for i := range checks {
		fmt.Fprintf(&b, "check web%06d http http://127.0.0.1:9/health%s\n", i, opt)
		fmt.Fprintf(&b, "record web%06d.example.org. failover {\nprimary A 192.0.2.1 check web%06d id p\nsecondary A 192.0.2.2 id s\n}\n", i, i)
	}
	b.WriteString("}")
	h := testHandler(tb, b.String())
	initCheckSeries(h.cfg)
	tb.Cleanup(func() { // each series by its labels: DeletePartialMatch walks them all
		for name := range h.cfg.Checks {
			for _, v := range []*prometheus.MetricVec{checkHealthy.MetricVec, probeDuration.MetricVec, probeLag.MetricVec, probeLocalErrors.MetricVec} {
				v.DeleteLabelValues(name)
			}
			for _, l := range [][2]string{{"pass", "fail"}, {"healthy", "unhealthy"}, {"connect", "first_byte"}} {
				probesTotal.DeleteLabelValues(name, l[0])
				probesTotal.DeleteLabelValues(name, l[1])
				transitionsTotal.DeleteLabelValues(name, l[0])
				transitionsTotal.DeleteLabelValues(name, l[1])
				probePhase.DeleteLabelValues(name, l[0])
				probePhase.DeleteLabelValues(name, l[1])
			}
		}
	})
	h.resolver.Publish(snapshot(h.cfg))
	for _, s := range h.cfg.Checks {
		probeObserver{}.Started(s, 0)
		probeObserver{}.Probed(s, nil, 3*time.Millisecond)
		probeObserver{}.Phased(s, health.Phases{Connect: time.Millisecond, FirstByte: 2 * time.Millisecond, Total: 3 * time.Millisecond})
	}
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: "dns://127.0.0.1:5313"})
	m := new(dns.Msg)
	m.SetQuestion("web000000.example.org.", dns.TypeA)
	if _, err := h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
		tb.Fatal(err)
	}
}

// encodeScrape is one scrape of the default registry in the text format, as the
// metrics plugin's handler writes it but without its 5 s write timeout, which a
// scrape of 10,000 checks can outlast under the race detector on a loaded host.
func encodeScrape(tb testing.TB) []byte {
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			tb.Fatal(err)
		}
	}
	return b.Bytes()
}

// scrapeSize is the size of encodeScrape's scrape.
func scrapeSize(tb testing.TB) int { return len(encodeScrape(tb)) }

// TestScrapeOf10kChecks: with default options a scrape of 10,000 probed checks is at
// most the 16 MB docs/observability.md states, and has no phase histograms.
func TestScrapeOf10kChecks(t *testing.T) {
	checkedScrape(t, 10_000, false)
	body := encodeScrape(t)
	if len(body) > 16_000_000 {
		t.Errorf("one scrape of 10,000 checks is %d bytes, want at most 16 MB", len(body))
	}
	if bytes.Contains(body, []byte("probe_phase_duration_seconds_bucket{")) {
		t.Error("the scrape has phase histograms, which no check asked for")
	}
	if !bytes.Contains(body, []byte(`probe_duration_seconds_count{check="web009999"} 1`)) {
		t.Error("the scrape lacks a check's probe duration")
	}
	t.Logf("one scrape of 10,000 checks: %d bytes", len(body))
}

// TestPhasesOnlyWithMeasureLatency: a check's probe phases are exported when it has
// measure_latency, and only then.
func TestPhasesOnlyWithMeasureLatency(t *testing.T) {
	for _, measure := range []bool{false, true} {
		checkedScrape(t, 2, measure)
		body := scrape(t)
		has := bytes.Contains(body, []byte(`probe_phase_duration_seconds_count{check="web000001",phase="first_byte"} 1`))
		if has != measure {
			t.Errorf("measure_latency %v: phase histograms exported: %v", measure, has)
		}
	}
}

// BenchmarkScrapeOfChecks reports the size of one scrape of 10,000 and 100,000
// probed checks (checkedScrape), with default options and with measure_latency.
// One scrape of 10,000 checks measured 15.5 MB by default and 35.8 MB with
// measure_latency; of 100,000, 155 MB by default.
//
//	go test -run '^$' -bench ScrapeOfChecks -benchtime 1x .
func BenchmarkScrapeOfChecks(b *testing.B) {
	for _, checks := range []int{10_000, 100_000} {
		for _, measure := range []bool{false, true} {
			b.Run(fmt.Sprintf("checks=%d/measure_latency=%v", checks, measure), func(b *testing.B) {
				checkedScrape(b, checks, measure)
				var size int
				for b.Loop() {
					size = scrapeSize(b)
				}
				b.ReportMetric(float64(size)/1e6, "MB/scrape")
			})
		}
	}
}
