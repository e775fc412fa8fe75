package healthroute

import (
	"net"
	"slices"
	"sync"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/routing"
	"github.com/healthroute/healthroute/view"
)

// probeBuckets are the probe duration buckets: past every default probe budget
// (6 s for http, 8 s with match, 10 s for tcp) to 30 s, so a quantile can show a
// slow or a timed-out probe rather than saturate at the last bucket. They are few,
// as CoreDNS's SlimTimeBuckets are: each check has a histogram, and a scrape of
// 10,000 checks must stay small.
var probeBuckets = []float64{.0025, .025, .1, .5, 1, 2.5, 5, 10, 30}

// phaseBuckets are the probe phase buckets (connect, TLS, first byte): fewer still,
// a check has up to three.
var phaseBuckets = []float64{.001, .01, .05, .25, 1, 5, 30}

var (
	reloadsFailed = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "reloads_failed_total",
		Help: "Reloads of the Corefile that failed (a parse error, a block that could not start): the previous configuration kept running.",
	})
	groupsFailingOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "record_groups_failing_open",
		Help: "Record groups whose every member is unhealthy, answering as if all were healthy (last resort).",
	})
	groupFailingOpen = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "record_failing_open",
		Help: "1 for each record group failing open now (every member unhealthy); absent otherwise.",
	}, []string{"record", "type", "policy"})
	checkRecords = newCheckRecordsCollector()
)

// initCheckSeries creates at 0 the counter series of cfg's probed checks, so that
// rate(), increase() and ratios have a series before the first probe, failure or
// transition. Label values come from the configuration only.
func initCheckSeries(cfg *blockConfig) {
	for name, s := range cfg.Checks {
		if !s.Probed() {
			continue
		}
		probesTotal.WithLabelValues(name, "pass")
		probesTotal.WithLabelValues(name, "fail")
		if s.Type == health.Prometheus {
			probesTotal.WithLabelValues(name, "no_data")
		}
		transitionsTotal.WithLabelValues(name, "healthy")
		transitionsTotal.WithLabelValues(name, "unhealthy")
		probeLocalErrors.WithLabelValues(name)
	}
}

// dropCheckFamilies deletes every per-check series of the check name.
func dropCheckFamilies(name string) {
	l := prometheus.Labels{"check": name}
	checkHealthy.DeletePartialMatch(l)
	probesTotal.DeletePartialMatch(l)
	probeDuration.DeletePartialMatch(l)
	probePhase.DeletePartialMatch(l)
	transitionsTotal.DeletePartialMatch(l)
	probeLag.DeletePartialMatch(l)
	probeLocalErrors.DeletePartialMatch(l)
}

// checkRecordsCollector exports check_record_groups{check, record, type, policy} 1
// for every check and record group whose member it guards, directly or as a child
// of a calculated check: "what does this failing check take out?" is a join on
// check. It is computed from the running configuration at scrape time and holds
// no series of its own.
type checkRecordsCollector struct{ desc *prometheus.Desc }

func newCheckRecordsCollector() *checkRecordsCollector {
	c := &checkRecordsCollector{desc: prometheus.NewDesc(prometheus.BuildFQName(plugin.Namespace, "healthroute", "check_record_groups"),
		"1 for each check and each record group (record, type, policy) one of whose members it guards, directly or through a calculated check.",
		[]string{"check", "record", "type", "policy"}, nil)}
	prometheus.MustRegister(c)
	return c
}

func (c *checkRecordsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *checkRecordsCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[[4]string]bool{}
	emit := func(check string, rs *routing.RecordSet, typ string) {
		k := [4]string{check, rs.Name, typ, rs.Policy.String()}
		if !seen[k] {
			seen[k] = true
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, k[:]...)
		}
	}
	for _, b := range shared.op.Blocks() {
		h, ok := b.(*HealthRoute)
		if !ok {
			continue
		}
		for _, rs := range h.cfg.Records {
			for _, m := range rs.Members {
				if m.Check == nil {
					continue
				}
				if len(m.Check.Children) == 0 {
					emit(m.Check.Name, rs, m.TypeName())
					continue
				}
				for _, s := range health.Flatten([]*health.Spec{m.Check}) {
					emit(s.Name, rs, m.TypeName())
				}
			}
		}
	}
}

// failingOpen tracks the record groups failing open, by block, for the
// record_failing_open and record_groups_failing_open gauges: a group that several
// blocks (or a reload's old and new block) serve counts once.
type failingOpen struct {
	mu      sync.Mutex
	byBlock map[*routing.Resolver]map[[3]string]bool
	count   map[[3]string]int // blocks in which each group fails open
	spans   map[[3]string][]openSpan
}

// openSpan is one time a group failed open; end is zero while it does.
type openSpan struct{ start, end time.Time }

// Each group keeps its last maxOpenSpans times failing open, and none older than
// openSpanAge once it is over: for the status page.
const (
	maxOpenSpans = 16
	openSpanAge  = 24 * time.Hour
)

// set records whether r's group n fails open.
func (f *failingOpen) set(r *routing.Resolver, n *routing.Node, open bool) {
	k := [3]string{n.Set.Name, dns.TypeToString[n.QType], n.Set.Policy.String()}
	f.mu.Lock()
	defer f.mu.Unlock()
	mine := f.byBlock[r]
	if mine[k] == open {
		return
	}
	if open {
		if mine == nil {
			mine = map[[3]string]bool{}
			f.byBlock[r] = mine
		}
		mine[k] = true
		f.count[k]++
	} else {
		delete(mine, k)
		f.count[k]--
	}
	f.publishLocked(k)
}

// drop forgets r's groups: its block shut down.
func (f *failingOpen) drop(r *routing.Resolver) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.byBlock[r] {
		f.count[k]--
		f.publishLocked(k)
	}
	delete(f.byBlock, r)
}

func (f *failingOpen) publishLocked(k [3]string) {
	now := time.Now()
	sp := f.spans[k]
	open := len(sp) > 0 && sp[len(sp)-1].end.IsZero()
	switch {
	case f.count[k] > 0 && !open:
		sp = append(sp, openSpan{start: now})
	case f.count[k] <= 0 && open:
		sp[len(sp)-1].end = now
	}
	for len(sp) > 0 && (len(sp) > maxOpenSpans || (!sp[0].end.IsZero() && now.Sub(sp[0].end) > openSpanAge)) {
		sp = sp[1:]
	}
	if len(sp) == 0 {
		delete(f.spans, k)
	} else {
		f.spans[k] = sp
	}
	if f.count[k] > 0 {
		groupFailingOpen.WithLabelValues(k[:]...).Set(1)
	} else {
		delete(f.count, k)
		groupFailingOpen.DeleteLabelValues(k[:]...)
	}
	groupsFailingOpen.Set(float64(len(f.count)))
}

func registerFleetMetrics() {
	shared.fleetMetrics.Do(func() {
		prometheus.MustRegister(fleet.Collectors()...)
		prometheus.MustRegister(newFleetChecksCollector())
	})
}

// fleetChecksCollector exports, for each probed check, how many members' reports
// this instance holds and how many of them it counts (reachable and fresh), and
// whether the quorum had nothing to count and kept the last status.
type fleetChecksCollector struct{ reporting, counted, kept *prometheus.Desc }

func newFleetChecksCollector() *fleetChecksCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(plugin.Namespace, "healthroute", name), help, []string{"check"}, nil)
	}
	return &fleetChecksCollector{
		reporting: d("fleet_check_reports", "Fleet members with a report of the check known here, counted or not."),
		counted:   d("fleet_check_reports_counted", "Fleet members whose report of the check the quorum counts now: reachable, fresh."),
		kept:      d("fleet_check_status_kept", "1 when no member's report of the check counts and the last status is kept: no quorum."),
	}
}

func (c *fleetChecksCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reporting
	ch <- c.counted
	ch <- c.kept
}

func (c *fleetChecksCollector) Collect(ch chan<- prometheus.Metric) {
	fl := shared.fleet()
	if fl == nil {
		return
	}
	seen := map[string]bool{}
	for _, b := range shared.op.Blocks() {
		h, ok := b.(*HealthRoute)
		if !ok {
			continue
		}
		for name, s := range h.cfg.Checks {
			if !s.Probed() || seen[name] {
				continue
			}
			seen[name] = true
			v := fl.View(s.Fingerprint())
			kept := 0.0
			if v.Kept {
				kept = 1
			}
			ch <- prometheus.MustNewConstMetric(c.reporting, prometheus.GaugeValue, float64(len(v.Reports)), name)
			ch <- prometheus.MustNewConstMetric(c.counted, prometheus.GaugeValue, float64(v.Total), name)
			ch <- prometheus.MustNewConstMetric(c.kept, prometheus.GaugeValue, kept, name)
		}
	}
}

// serverAddrs returns the addresses of the servers a block's configuration listens
// on, as CoreDNS names them in the server label: TRANSPORT://HOST:PORT, HOST empty
// without bind.
func serverAddrs(c *dnsserver.Config) []string {
	var out []string
	for _, h := range c.ListenHosts {
		addr, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(h, c.Port))
		if err != nil {
			continue
		}
		out = append(out, c.Transport+"://"+addr.String())
	}
	return out
}

// since returns the times the groups records names failed open that were not over
// before from, latest start first.
func (f *failingOpen) since(from time.Time, records map[string]bool) []view.OpenSpan {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []view.OpenSpan
	for k, sp := range f.spans {
		if !records[k[0]] {
			continue
		}
		for _, s := range sp {
			if s.end.IsZero() || !s.end.Before(from) {
				out = append(out, view.OpenSpan{Record: k[0], Type: k[1], Policy: k[2], Start: s.start.UTC(), End: s.end.UTC()})
			}
		}
	}
	slices.SortFunc(out, func(a, b view.OpenSpan) int { return b.Start.Compare(a.Start) })
	return out
}
