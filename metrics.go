package healthroute

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/routing"
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
		Help: "Time a probe took.", Buckets: probeBuckets,
	}, []string{"check"})
	probePhase = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "probe_phase_duration_seconds",
		Help: "Phases of probes: connect and tls (their own durations) and first_byte (from the probe's start); the whole probe is probe_duration_seconds.", Buckets: phaseBuckets,
	}, []string{"check", "phase"})
	transitionsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "check_transitions_total",
		Help: "Changes of a check's probed state, by the state changed to: healthy or unhealthy.",
	}, []string{"check", "to"})
	_        = schedulerGauge("probes_in_flight", "Probes running now, across every check.", (*health.Scheduler).InFlight)
	probeLag = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "probe_lag_seconds",
		Help: "How long after its due time a check's latest probe started, waiting for a free probe slot.",
	}, []string{"check"})
	probeLocalErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "probe_local_errors_total",
		Help: "Probes with no result because this process lacked a resource (file descriptors, buffers, source ports); the check kept its state.",
	}, []string{"check"})
	_ = schedulerGauge("probe_backlog", "Checks past their due time, waiting for a free probe slot.", (*health.Scheduler).Backlog)
	_ = schedulerGauge("probe_backlog_wait_seconds", "How long the check that has waited longest for a free probe slot has waited so far; 0 when none waits.",
		func(s *health.Scheduler) float64 { return s.LongestWait().Seconds() })
	_ = schedulerGauge("max_probes", "The bound on probes in flight in force: max_probes, or the one fitted to the checks.",
		(*health.Scheduler).MaxInFlightNow)
	answersTotal = newAnswerFamily(routing.AnswerSeries, "answers_total",
		"Answers, by the record set and member (set identifier) they came from.",
		"server", "zone", "record", "member")
	lastResortTotal = newAnswerFamily(routing.ResortSeries, "last_resort_answers_total",
		"Answers given by a record set in its last resort: every member unhealthy, answered as if all were healthy.",
		"server", "zone", "record")
	publicationsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "table_publications_total",
		Help: "Routing tables compiled and published after a health change.",
	})
	compileDuration = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "table_compile_duration_seconds",
		Help: "Time to compile a routing table from a health snapshot.", Buckets: plugin.SlimTimeBuckets,
	})
)

// schedulerGauge registers a gauge that reads the running scheduler (0 without one).
func schedulerGauge[T int | float64](name, help string, read func(*health.Scheduler) T) prometheus.GaugeFunc {
	return promauto.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: name, Help: help,
	}, func() float64 {
		if s := shared.scheduler(); s != nil {
			return float64(read(s))
		}
		return 0
	})
}

// probeObserver feeds the check metrics from the scheduler, and tells the running
// fleet member, when fl holds one, each probe's failure reason.
type probeObserver struct{ fl *atomic.Pointer[fleet.Fleet] }

func (o probeObserver) Probed(spec *health.Spec, err error, took time.Duration) {
	if o.fl != nil {
		if f := o.fl.Load(); f != nil {
			f.Probed(spec.Fingerprint(), err)
		}
	}
	result := "pass"
	switch {
	case errors.Is(err, health.ErrNoData):
		result = "no_data"
	case err != nil:
		result = "fail"
	}
	probesTotal.WithLabelValues(spec.Name, result).Inc()
	shared.histories.Probe(spec.Fingerprint(), spec.Name, time.Now(), err == nil, took)
	probeDuration.WithLabelValues(spec.Name).Observe(took.Seconds())
}

// Phased exports the phases of the probes of checks with measure_latency: three
// histograms a check, the largest part of a scrape of many checks, opt-in as Route
// 53's MeasureLatency is.
func (probeObserver) Phased(spec *health.Spec, p health.Phases) {
	if !spec.MeasureLatency {
		return
	}
	p.Total = 0 // probe_duration_seconds has it
	p.Each(func(phase string, d time.Duration) { probePhase.WithLabelValues(spec.Name, phase).Observe(d.Seconds()) })
}

func (probeObserver) Started(spec *health.Spec, lag time.Duration) {
	probeLag.WithLabelValues(spec.Name).Set(lag.Seconds())
}

func (probeObserver) Skipped(spec *health.Spec, _ error) {
	probeLocalErrors.WithLabelValues(spec.Name).Inc()
}

func (probeObserver) Changed(spec *health.Spec, down bool) {
	to := "healthy"
	if down {
		to = "unhealthy"
	}
	transitionsTotal.WithLabelValues(spec.Name, to).Inc()
}

// observePublication is the routing.Resolver's publish hook (OnPublish): it times the
// compilation, counts the publication, sets the check gauges and logs, once per change
// and not per query, each record group that started or stopped answering in its last
// resort.
func observePublication(r *routing.Resolver, prev, t *routing.Table, took time.Duration) {
	compileDuration.Observe(took.Seconds())
	publicationsTotal.Inc()
	checks, nodes := t.Flipped, t.Changed // what the compile reached; nil: everything
	if checks == nil {
		checks = r.Plan.Checks
	}
	if nodes == nil {
		nodes = r.Plan.Nodes
	}
	for _, s := range checks {
		v := 0.0
		if t.Healthy(s) {
			v = 1
		}
		checkHealthy.WithLabelValues(s.Name).Set(v)
	}
	for _, n := range nodes {
		was := prev != nil && prev.State(n.ID).FailOpen
		if now := t.State(n.ID).FailOpen; now != was && !n.DynHealth {
			shared.failing.set(r, n, now)
			if now {
				log.Warningf("record %s %s: every member is unhealthy: answering as if all were healthy (last resort)", n.Set.Name, dns.TypeToString[n.QType])
			} else if prev != nil {
				log.Infof("record %s %s: a member is healthy again: last resort over", n.Set.Name, dns.TypeToString[n.QType])
			}
		}
	}
}
