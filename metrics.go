package healthroute

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
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
	answersTotal = newAnswerCounter("answers_total",
		"Answers, by the record set and member (set identifier) they came from.",
		"server", "zone", "record", "member")
	lastResortTotal = newAnswerCounter("last_resort_answers_total",
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

// answerCounter is a counter family for the query path, with a series per member of
// every record set. A series is its labels (the configuration's own strings, not
// copied) as a map key and a word: about 100 bytes, where a CounterVec series costs
// about 800 (label pairs and hashes), which with three members per name was a third
// of a large configuration's memory. Series live for the process, as a CounterVec's
// would: a reload continues them.
type answerCounter struct {
	desc   *prometheus.Desc
	labels int
	mu     sync.Mutex
	series map[[4]string]*atomic.Uint64
}

func newAnswerCounter(name, help string, labels ...string) *answerCounter {
	c := &answerCounter{
		desc:   prometheus.NewDesc(prometheus.BuildFQName(plugin.Namespace, "healthroute", name), help, labels, nil),
		labels: len(labels), series: map[[4]string]*atomic.Uint64{},
	}
	prometheus.MustRegister(c)
	return c
}

// get returns the series of labels, creating it (at zero) the first time.
func (c *answerCounter) get(labels ...string) *atomic.Uint64 {
	var key [4]string
	copy(key[:], labels)
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.series[key]
	if !ok {
		n = new(atomic.Uint64)
		c.series[key] = n
	}
	return n
}

// Describe implements prometheus.Collector.
func (c *answerCounter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *answerCounter) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ms := make([]prometheus.Metric, 0, len(c.series))
	for labels, n := range c.series {
		ms = append(ms, prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n.Load()), labels[:c.labels]...))
	}
	c.mu.Unlock()
	for _, m := range ms {
		ch <- m
	}
}

// queryCounters caches the query-path series of one server, in slices indexed by the
// ordinals the plan gave members and record sets, so a query costs a slice index and
// an atomic add, not a label hash. A series is created the first time it is counted.
type queryCounters struct {
	server  string
	answers []atomic.Pointer[atomic.Uint64] // by Member.idx
	sets    []atomic.Pointer[atomic.Uint64] // by RecordSet.idx: multivalue answers
	resort  []atomic.Pointer[atomic.Uint64] // by RecordSet.idx: last-resort answers
}

// counters returns the counters of server, creating them on its first query.
func (h *HealthRoute) counters(server string) *queryCounters {
	if qc := h.lastCounters.Load(); qc != nil && qc.server == server {
		return qc // nearly every block serves one server
	}
	v, ok := h.serverCounters.Load(server)
	if !ok {
		sets := len(h.cfg.Records)
		v, _ = h.serverCounters.LoadOrStore(server, &queryCounters{server: server,
			answers: make([]atomic.Pointer[atomic.Uint64], h.cfg.members),
			sets:    make([]atomic.Pointer[atomic.Uint64], sets),
			resort:  make([]atomic.Pointer[atomic.Uint64], sets)})
	}
	qc := v.(*queryCounters)
	h.lastCounters.Store(qc)
	return qc
}

// load returns the series in slot, looking it up in c by labels the first time.
func load(slot *atomic.Pointer[atomic.Uint64], c *answerCounter, labels ...string) *atomic.Uint64 {
	if s := slot.Load(); s != nil {
		return s
	}
	slot.CompareAndSwap(nil, c.get(labels...))
	return slot.Load()
}

// count records one answer's metrics. The common case, one member's answer counted
// before on the block's one server, is inlined into the query path; the rest, with
// its larger frame, runs only when needed.
func (h *HealthRoute) count(server string, ans *Answer) {
	if ans.leafSet == nil && ans.resortSet == nil {
		return
	}
	if qc := h.lastCounters.Load(); qc != nil && qc.server == server && ans.leaf != nil && ans.resortSet == nil {
		if n := qc.answers[ans.leaf.idx].Load(); n != nil {
			n.Add(1)
			return
		}
	}
	h.countSlow(server, ans)
}

// countSlow is count's general case: a first answer (creating the series), a
// multivalue or last-resort answer, another server.
//
//go:noinline
func (h *HealthRoute) countSlow(server string, ans *Answer) {
	qc := h.counters(server)
	if set := ans.leafSet; set != nil {
		if m := ans.leaf; m != nil {
			load(&qc.answers[m.idx], answersTotal, server, ans.Zone, set.Name, m.ID).Add(1)
		} else {
			load(&qc.sets[set.idx], answersTotal, server, ans.Zone, set.Name, "multivalue").Add(1)
		}
	}
	if set := ans.resortSet; set != nil {
		load(&qc.resort[set.idx], lastResortTotal, server, ans.Zone, set.Name).Add(1)
	}
}

// observePublication is the resolver's publish hook: it times the compilation,
// counts the publication, sets the check gauges and logs, once per change and not
// per query, each record group that started or stopped answering in its last resort.
func (r *Resolver) observePublication(prev, t *table, took time.Duration) {
	compileDuration.Observe(took.Seconds())
	publicationsTotal.Inc()
	checks, nodes := t.flipped, t.changed // what the compile reached; nil: everything
	if checks == nil {
		checks = r.plan.checks
	}
	if nodes == nil {
		nodes = r.plan.nodes
	}
	for _, s := range checks {
		v := 0.0
		if t.healthy(s) {
			v = 1
		}
		checkHealthy.WithLabelValues(s.Name).Set(v)
	}
	for _, n := range nodes {
		was := prev != nil && prev.state(n.id).failOpen
		if now := t.state(n.id).failOpen; now != was && !n.dynHealth {
			if now {
				log.Warningf("record %s %s: every member is unhealthy: answering as if all were healthy (last resort)", n.set.Name, dns.TypeToString[n.qtype])
			} else if prev != nil {
				log.Infof("record %s %s: a member is healthy again: last resort over", n.set.Name, dns.TypeToString[n.qtype])
			}
		}
	}
}
