package healthroute

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/healthroute/healthroute/internal/percpu"
	"github.com/healthroute/healthroute/routing"
)

// Answer metrics. answers_total has a series for each member (set identifier) of
// every record set whose name's answer can change and for each such multivalue set,
// last_resort_answers_total one for each record name that can fail open
// (routing.NoSeries for the others): a large configuration has hundreds of
// thousands. A CounterVec
// series costs about 800 bytes and a map entry keyed by the label values about 200,
// which made them the largest part of such a configuration's memory. So a block
// plan numbers its series once (numberSeries), counts on each server into a slice by those
// numbers, 8 bytes a series, and a scrape walks the configuration in numbering order
// for the labels. An answer whose query's zone is not its record set's own (an alias
// into another zone of the block) is the exception, counted in a map by its labels.
//
// The series that a core answers most are counted in slots of that core's own
// (percpu.Slots), so that queries for one popular name on several cores do not all write
// one cache line; a scrape adds them to the slice's counts.
//
// A reload's block continues the series of the block it replaces (the same server
// and a zone in common) when it starts, or on its first query on that server if that
// comes first (adopt): the series it keeps continue, those it dropped go with the old
// block.

// answerFamily is the collector of one of the two answer metrics.
type answerFamily struct {
	desc   *prometheus.Desc
	which  int // AnswerSeries or ResortSeries
	labels int
	mu     sync.Mutex
	extra  map[[4]string]*atomic.Uint64 // answers out of their record set's zone, by labels
}

func newAnswerFamily(which int, name, help string, labels ...string) *answerFamily {
	f := &answerFamily{
		desc:  prometheus.NewDesc(prometheus.BuildFQName(plugin.Namespace, "healthroute", name), help, labels, nil),
		which: which, labels: len(labels), extra: map[[4]string]*atomic.Uint64{},
	}
	prometheus.MustRegister(f)
	return f
}

// extraSeries returns the series of labels in the map, creating it the first time.
func (f *answerFamily) extraSeries(labels ...string) *atomic.Uint64 {
	var key [4]string
	copy(key[:], labels)
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.extra[key]
	if !ok {
		n = new(atomic.Uint64)
		f.extra[key] = n
	}
	return n
}

// Describe implements prometheus.Collector.
func (f *answerFamily) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

// Collect implements prometheus.Collector: the series counted since the process
// started, those of blocks a reload replaced included, each once. A server's series
// may come from more than one source: the map, and the blocks counting there (a
// reload's block adopts only a block of the same zones, so after a reload that
// changed them the old block's counts stay beside the new one's). Where a server has
// several, equal labels are summed: the registry refuses a scrape with a series twice.
func (f *answerFamily) Collect(ch chan<- prometheus.Metric) {
	var ms []prometheus.Metric
	sources := map[string]int{}  // by server
	var sum map[[4]string]uint64 // the series of servers with several sources
	metric := func(v uint64, labels ...string) {
		if sources[labels[0]] > 1 {
			var k [4]string
			copy(k[:], labels)
			if sum == nil {
				sum = map[[4]string]uint64{}
			}
			sum[k] += v
			return
		}
		ms = append(ms, prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, float64(v), labels[:f.labels]...))
	}
	f.mu.Lock()
	shared.counting.mu.Lock()
	for labels := range f.extra {
		sources[labels[0]] = 1
	}
	for _, qc := range shared.counting.all {
		sources[qc.server]++
	}
	for labels, n := range f.extra {
		metric(n.Load(), labels[:]...)
	}
	f.mu.Unlock()
	for _, qc := range shared.counting.all {
		c := &qc.c[f.which]
		hot := c.hotCounts()
		moved := qc.next.Load() != nil
		// A running block's last-resort series exist at 0 (alerts and ratios need
		// them before the first); answers_total's, one per member, only once counted.
		zeros := f.which == routing.ResortSeries && !moved && !qc.retired
		qc.plan.WalkSeries(f.which, func(n int32, zone, record, member string) {
			if v := c.n[n].Load() + hot[n]; (v > 0 || zeros) && !(moved && c.remap[n] >= 0) { // moved: the successor reports it
				metric(v, qc.server, zone, record, member)
			}
		})
	}
	shared.counting.mu.Unlock()
	for labels, v := range sum {
		ms = append(ms, prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, float64(v), labels[:f.labels]...))
	}
	for _, m := range ms {
		ch <- m
	}
}

// queryCounters are one block's answer counts on one server, by series number.
type queryCounters struct {
	server string
	cfg    *blockConfig    // the block's configuration: which block they are
	plan   *routing.Plan   // and its plan: their series' numbers and labels
	c      [2]seriesCounts // AnswerSeries, ResortSeries
	// next is the block that adopted these counts on reload: counts that still
	// arrive here (the old block's queries in flight) are passed on to it.
	next    atomic.Pointer[queryCounters]
	retired bool // the block shut down before a successor adopted them; guarded by shared.counting.mu
}

// seriesCounts is a block's counts of one kind of series.
type seriesCounts struct {
	n     []atomic.Uint64 // by series number
	hot   *percpu.Slots   // and the series each core answers most, in slots of its own
	remap []int32         // once adopted: each series' number in the successor, -1 for a dropped one
}

func newSeriesCounts(series int32) seriesCounts {
	return seriesCounts{n: make([]atomic.Uint64, series), hot: percpu.NewSlots()}
}

// inc counts one for series n.
func (c *seriesCounts) inc(n int32, v uint64) {
	if v != 1 || !c.hot.Add(n) {
		c.n[n].Add(v)
	}
}

// hotCounts returns the counts in the cores' slots by series (nil for none).
func (c *seriesCounts) hotCounts() map[int32]uint64 {
	var hot map[int32]uint64
	c.hot.Each(func(n int32, v uint64) {
		if hot == nil {
			hot = map[int32]uint64{}
		}
		hot[n] += v
	})
	return hot
}

// add counts v answers of series n of kind which, where they are counted now.
func (qc *queryCounters) add(which int, n int32, v uint64) {
	for {
		c := &qc.c[which]
		nx := qc.next.Load()
		if nx == nil || c.remap[n] < 0 {
			c.inc(n, v)
			return
		}
		qc, n = nx, c.remap[n]
	}
}

// counters returns the counters of server, creating them on its first query.
func (h *HealthRoute) counters(server string) *queryCounters {
	if qc := h.lastCounters.Load(); qc != nil && qc.server == server {
		return qc // nearly every block serves one server
	}
	v, ok := h.serverCounters.Load(server)
	if !ok {
		p := h.resolver.Plan
		qc := &queryCounters{server: server, cfg: h.cfg, plan: p}
		qc.c[routing.AnswerSeries] = newSeriesCounts(p.SeriesCount[routing.AnswerSeries])
		qc.c[routing.ResortSeries] = newSeriesCounts(p.SeriesCount[routing.ResortSeries])
		if v, ok = h.serverCounters.LoadOrStore(server, qc); !ok {
			shared.counting.add(qc)
		}
	}
	qc := v.(*queryCounters)
	h.lastCounters.Store(qc)
	return qc
}

// counterSets holds every block's query counters, for scrapes.
type counterSets struct {
	mu  sync.Mutex
	all []*queryCounters
}

var counting counterSets

// add registers qc, adopting the counts of the block it replaces on reload.
func (cs *counterSets) add(qc *queryCounters) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.all = slices.DeleteFunc(cs.all, func(p *queryCounters) bool {
		if p.server != qc.server || !replaces(qc.cfg, p) {
			return false
		}
		adopt(p, qc)
		return p.retired // its block is gone: nothing counts there any more
	})
	cs.all = append(cs.all, qc)
}

// replaces reports whether a block of cfg takes over p: p is another block's, not
// yet taken over, with a zone in common (a reload that adds or drops a zone keeps
// counting the records it keeps).
func replaces(cfg *blockConfig, p *queryCounters) bool {
	return p.cfg != cfg && p.next.Load() == nil && slices.ContainsFunc(p.cfg.Zones, func(z string) bool { return slices.Contains(cfg.Zones, z) })
}

// adoptCounters creates h's counters on every server where a block it replaces
// counted, taking those counts over now: adopt walks both configurations (a few
// hundred milliseconds at a hundred thousand names), which OnStartup pays rather
// than the first query after a reload.
func (h *HealthRoute) adoptCounters() {
	var servers []string
	shared.counting.mu.Lock()
	for _, p := range shared.counting.all {
		if replaces(h.cfg, p) && !slices.Contains(servers, p.server) {
			servers = append(servers, p.server)
		}
	}
	shared.counting.mu.Unlock()
	for _, s := range servers {
		h.counters(s)
	}
}

// shutdown ends the counters of cfg's block: those adopted by a successor pass on
// what arrived since and go; the others stay, retired, for a successor to adopt.
func (cs *counterSets) shutdown(cfg *blockConfig) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.all = slices.DeleteFunc(cs.all, func(p *queryCounters) bool {
		if p.cfg != cfg {
			return false
		}
		if p.next.Load() == nil {
			p.retired = true
			return false
		}
		p.sweep()
		return true
	})
}

// adopt makes qc the successor of p: each series of p that qc's configuration has
// (the same zone, record and member) continues there.
func adopt(p, qc *queryCounters) {
	for which := range p.c {
		num := make(map[[3]string]int32, qc.plan.SeriesCount[which])
		qc.plan.WalkSeries(which, func(n int32, zone, record, member string) { num[[3]string{zone, record, member}] = n })
		remap := make([]int32, len(p.c[which].n))
		p.plan.WalkSeries(which, func(n int32, zone, record, member string) {
			if j, ok := num[[3]string{zone, record, member}]; ok {
				remap[n] = j
			} else {
				remap[n] = -1
			}
		})
		p.c[which].remap = remap
	}
	p.next.Store(qc)
	p.sweep()
}

// sweep moves p's counts of the series its successor continues there.
func (p *queryCounters) sweep() {
	nx := p.next.Load()
	for which := range p.c {
		c := &p.c[which]
		for n, j := range c.remap {
			if j >= 0 {
				if v := c.n[n].Swap(0); v > 0 {
					nx.add(which, j, v)
				}
			}
		}
		c.hot.Take(func(n int32) bool { return c.remap[n] >= 0 }, func(n int32, v uint64) { nx.add(which, c.remap[n], v) })
	}
}

// count records one answer's metrics. The common case, one member's answer in its
// record set's zone on the block's one server, is inlined into the query path; the
// rest, with its larger frame, runs only when needed.
func (h *HealthRoute) count(server string, ans *routing.Answer) {
	if ans.LeafSet == nil && ans.ResortSet == nil {
		return
	}
	if qc := h.lastCounters.Load(); qc != nil && qc.server == server && ans.Leaf != nil && ans.ResortSet == nil &&
		qc.next.Load() == nil && ans.Zone == h.cfg.Zones[ans.LeafSet.Zone] {
		if n := ans.Leaf.Series; n != routing.NoSeries {
			qc.c[routing.AnswerSeries].inc(n, 1)
		}
		return
	}
	h.countSlow(server, ans)
}

// countSlow is count's general case: a first answer on a server, a multivalue or
// last-resort answer, an answer out of its record set's zone, counts adopted.
//
//go:noinline
func (h *HealthRoute) countSlow(server string, ans *routing.Answer) {
	qc := h.counters(server)
	if set := ans.LeafSet; set != nil {
		n, id := set.Multi, "multivalue"
		if mn := ans.Leaf; mn != nil {
			n, id = mn.Series, mn.Member.ID
		}
		switch {
		case n == routing.NoSeries: // the name's answer cannot change
		case ans.Zone == h.cfg.Zones[set.Zone]:
			qc.add(routing.AnswerSeries, n, 1)
		default:
			answersTotal.extraSeries(server, ans.Zone, set.Name, id).Add(1)
		}
	}
	if set := ans.ResortSet; set != nil && set.Resort != routing.NoSeries {
		if ans.Zone == h.cfg.Zones[set.Zone] {
			qc.add(routing.ResortSeries, set.Resort, 1)
		} else {
			lastResortTotal.extraSeries(server, ans.Zone, set.Name).Add(1)
		}
	}
}
