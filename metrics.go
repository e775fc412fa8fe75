package healthroute

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/healthroute/healthroute/health"
)

// Metrics. Check metrics carry `check` and no `server`: probing is process-wide.
// Query-path metrics start with `server`, then `zone`. Label values come from the
// configuration only.
var (
	checkHealthy = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "check_healthy",
		Help: "Whether a check is healthy (1) or not (0), after disabled, invert and operator overrides.",
	}, []string{"check"})
	probesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "probes_total",
		Help: "Probes run, by result: pass, fail or no_data.",
	}, []string{"check", "result"})
	probeDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "probe_duration_seconds",
		Help: "Time a probe took.", Buckets: plugin.SlimTimeBuckets,
	}, []string{"check"})
	transitionsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "check_transitions_total",
		Help: "Changes of a check's probed state, by the state changed to: healthy or unhealthy.",
	}, []string{"check", "to"})
	probesInFlight = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "probes_in_flight",
		Help: "Probes running now, across every check.",
	})
	answersTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "answers_total",
		Help: "Answers, by the record set and member (set identifier) they came from.",
	}, []string{"server", "zone", "record", "member"})
	lastResortTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "last_resort_answers_total",
		Help: "Answers given by a record set in its last resort: every member unhealthy, answered as if all were healthy.",
	}, []string{"server", "zone", "record"})
	publicationsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "table_publications_total",
		Help: "Routing tables compiled and published after a health change.",
	})
	compileDuration = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "table_compile_duration_seconds",
		Help: "Time to compile a routing table from a health snapshot.", Buckets: plugin.SlimTimeBuckets,
	})
)

// probeObserver feeds the check metrics from the scheduler.
type probeObserver struct{}

func (probeObserver) Probed(spec *health.Spec, err error, took time.Duration) {
	result := "pass"
	switch {
	case errors.Is(err, health.ErrNoData):
		result = "no_data"
	case err != nil:
		result = "fail"
	}
	probesTotal.WithLabelValues(spec.Name, result).Inc()
	probeDuration.WithLabelValues(spec.Name).Observe(took.Seconds())
}

func (probeObserver) Changed(spec *health.Spec, down bool) {
	to := "healthy"
	if down {
		to = "unhealthy"
	}
	transitionsTotal.WithLabelValues(spec.Name, to).Inc()
}

// countingChecker keeps probesInFlight.
type countingChecker struct{ health.Checker }

func (c countingChecker) Check(ctx context.Context) error {
	probesInFlight.Inc()
	defer probesInFlight.Dec()
	return c.Checker.Check(ctx)
}

// queryCounters caches the curried query-path counters of one server, so a query
// costs a pointer-keyed map load, not a label hash.
type queryCounters struct {
	server  string
	answers sync.Map // *Member or *RecordSet (multivalue) -> prometheus.Counter
	resort  sync.Map // *RecordSet -> prometheus.Counter
}

// count records one answer's metrics.
func (h *HealthRoute) count(server string, ans *Answer) {
	if ans.leafSet == nil && ans.resortSet == nil {
		return
	}
	v, ok := h.counters.Load(server)
	if !ok {
		v, _ = h.counters.LoadOrStore(server, &queryCounters{server: server})
	}
	qc := v.(*queryCounters)
	if set := ans.leafSet; set != nil {
		var key any = set
		member := "multivalue"
		if ans.leaf != nil {
			key, member = ans.leaf, ans.leaf.ID
		}
		c, ok := qc.answers.Load(key)
		if !ok {
			c, _ = qc.answers.LoadOrStore(key, answersTotal.WithLabelValues(server, ans.Zone, set.Name, member))
		}
		c.(prometheus.Counter).Inc()
	}
	if set := ans.resortSet; set != nil {
		c, ok := qc.resort.Load(set)
		if !ok {
			c, _ = qc.resort.LoadOrStore(set, lastResortTotal.WithLabelValues(server, ans.Zone, set.Name))
		}
		c.(prometheus.Counter).Inc()
	}
}
