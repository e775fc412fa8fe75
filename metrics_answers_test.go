package healthroute

import (
	"context"
	"slices"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// seriesAsk asks h for name and qtype n times on server, failing on an error.
func seriesAsk(t *testing.T, h *HealthRoute, server, name string, qtype uint16, n int) {
	t.Helper()
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: server})
	for range n {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		if _, err := h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAnswerSeriesShared: members that carry the same labels (a name's members of two
// types with one set identifier, a name's two multivalue sets, a name's record sets'
// last resort) count into one series, which a scrape reports once (the registry
// refuses a scrape with a series twice); an alias into another zone of the block is
// counted under the query's zone.
func TestAnswerSeriesShared(t *testing.T) {
	c := mustParse(t, `healthroute example.org. example.net. {
		check down tcp 127.0.0.1:9
		record sh-mix.example.org. weighted {
			weight 10 A 192.0.2.1 id one
			weight 10 AAAA 2001:db8::1 id one
		}
		record sh-mv.example.org. multivalue {
			value A 192.0.2.2 id a
		}
		record sh-mv.example.org. multivalue {
			value AAAA 2001:db8::2 id b
		}
		record sh-fo.example.org. failover {
			primary A 192.0.2.3 check down id p
		}
		record sh-fo.example.org. failover {
			primary AAAA 2001:db8::3 check down id p
		}
		record sh-alias.example.net. simple {
			alias sh-mix.example.org.
		}
	}`)
	h := newHandler(c, &registry{})
	h.Next = test.NextHandler(dns.RcodeNameError, nil)
	h.resolver.Publish(snapshot(h.cfg, "down"))
	server := "dns://127.0.0.1:5301"
	seriesAsk(t, h, server, "sh-mix.example.org.", dns.TypeA, 2)
	seriesAsk(t, h, server, "sh-mix.example.org.", dns.TypeAAAA, 3)
	seriesAsk(t, h, server, "sh-mv.example.org.", dns.TypeA, 1)
	seriesAsk(t, h, server, "sh-mv.example.org.", dns.TypeAAAA, 1)
	seriesAsk(t, h, server, "sh-fo.example.org.", dns.TypeA, 2)
	seriesAsk(t, h, server, "sh-fo.example.org.", dns.TypeAAAA, 2)
	seriesAsk(t, h, server, "sh-alias.example.net.", dns.TypeA, 4)
	t.Cleanup(func() {
		answersTotal.delete(server, "example.net.", "sh-mix.example.org.", "one")
		shared.counting.drop(h.cfg)
	})
	for _, tc := range []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"answers_total", map[string]string{"server": server, "zone": "example.org.", "record": "sh-mix.example.org.", "member": "one"}, 5},
		{"answers_total", map[string]string{"server": server, "zone": "example.org.", "record": "sh-mv.example.org.", "member": "multivalue"}, 2},
		{"answers_total", map[string]string{"server": server, "zone": "example.org.", "record": "sh-fo.example.org.", "member": "p"}, 4},
		{"last_resort_answers_total", map[string]string{"server": server, "zone": "example.org.", "record": "sh-fo.example.org."}, 4},
		{"answers_total", map[string]string{"server": server, "zone": "example.net.", "record": "sh-mix.example.org.", "member": "one"}, 4},
	} {
		if got := gatheredCounter(t, tc.metric, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
		}
	}
	if got := h.resolver.Plan.SeriesCount; got != [2]int32{routing.AnswerSeries: 4, routing.ResortSeries: 2} {
		t.Errorf("series = %v, want 4 answer series (one, multivalue, p, the alias) and 2 last-resort ones (the names that can fail open: a check, an alias evaluating its target)", got)
	}
}

// TestAnswerSeriesReload: a reload's block on the same server and zones continues the
// series of the block it replaced, on its first query: the members it keeps count on
// from the old totals, answers the old block gives after that are passed on, a member
// it dropped has no series once the old block shut down, and an old block that shut
// down before its successor's first query keeps its series until then.
func TestAnswerSeriesReload(t *testing.T) {
	const zone = "example.org."
	server := "dns://127.0.0.1:5302"
	series := func(member string) map[string]string {
		return map[string]string{"server": server, "zone": zone, "record": "rl.example.org.", "member": member}
	}
	old := testHandler(t, `healthroute {
		record rl.example.org. weighted {
			weight 10 A 192.0.2.1 id keep
		}
		record rl-gone.example.org. weighted {
			weight 10 A 192.0.2.9 id gone
		}
	}`)
	seriesAsk(t, old, server, "rl.example.org.", dns.TypeA, 3)
	seriesAsk(t, old, server, "rl-gone.example.org.", dns.TypeA, 2)

	// The new configuration adds a name before the kept one: its series numbers differ.
	next := testHandler(t, `healthroute {
		record rl-new.example.org. simple {
			A 192.0.2.5 id new
		}
		record rl.example.org. weighted {
			weight 10 A 192.0.2.1 id keep
		}
	}`)
	seriesAsk(t, next, server, "rl.example.org.", dns.TypeA, 1)
	wantAnswers(t, series("keep"), 4, "kept member after the new block's first answer")
	seriesAsk(t, old, server, "rl.example.org.", dns.TypeA, 2) // the old block's queries in flight
	seriesAsk(t, next, server, "rl-new.example.org.", dns.TypeA, 1)
	wantAnswers(t, series("keep"), 6, "kept member after the old block answered twice more")
	gone := map[string]string{"server": server, "record": "rl-gone.example.org."}
	wantAnswers(t, gone, 2, "dropped member before the old block shut down")
	if err := old.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	wantAnswers(t, gone, 0, "dropped member after the old block shut down")
	wantAnswers(t, series("keep"), 6, "kept member after the old block shut down")

	// A block that shuts down before its successor answered keeps its series, and the
	// successor takes them on its first query.
	if err := next.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	wantAnswers(t, series("keep"), 6, "kept member with its block shut down and no successor yet")
	third := testHandler(t, `healthroute {
		record rl.example.org. weighted {
			weight 10 A 192.0.2.1 id keep
		}
	}`)
	seriesAsk(t, third, server, "rl.example.org.", dns.TypeA, 1)
	wantAnswers(t, series("keep"), 7, "kept member after a third block's first answer")
	newSeries := map[string]string{"server": server, "record": "rl-new.example.org."}
	wantAnswers(t, newSeries, 0, "member the third block dropped")
	shared.counting.mu.Lock()
	defer shared.counting.mu.Unlock()
	for _, qc := range shared.counting.all {
		if qc.cfg == old.cfg || qc.cfg == next.cfg {
			t.Errorf("a replaced block's counters (server %s) are still registered", qc.server)
		}
	}
}

// drop removes every counter of cfg's block, retired or not: for tests that make many
// blocks that no successor will adopt.
func (cs *counterSets) drop(cfg *blockConfig) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.all = slices.DeleteFunc(cs.all, func(p *queryCounters) bool { return p.cfg == cfg })
}

// TestAnswerSeriesAdoptedAtStartup: a reload's block takes the old block's counts over
// when it starts (OnStartup), not on its first query: after the old block shut down,
// its kept series still reads its count with no query answered by the new block, and
// only the new block's counters remain registered for the server.
func TestAnswerSeriesAdoptedAtStartup(t *testing.T) {
	server := "dns://127.0.0.1:5304"
	block := `healthroute example.org. {
		record st.example.org. weighted {
			weight 10 A 192.0.2.1 id keep
		}
	}`
	old := testHandler(t, block)
	seriesAsk(t, old, server, "st.example.org.", dns.TypeA, 3)
	next := testHandler(t, block)
	if err := next.OnStartup(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := next.OnShutdown(); err != nil {
			t.Error(err)
		}
		shared.counting.drop(next.cfg)
	})
	if err := old.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"server": server, "record": "st.example.org.", "member": "keep"}
	wantAnswers(t, labels, 3, "kept member after the old block shut down, the new one started and asked nothing")
	shared.counting.mu.Lock()
	var mine, others int
	for _, qc := range shared.counting.all {
		switch {
		case qc.server != server:
		case qc.cfg == next.cfg:
			mine++
		default:
			others++
		}
	}
	shared.counting.mu.Unlock()
	if mine != 1 || others != 0 {
		t.Errorf("counters registered for %s: %d of the new block, %d of others; want 1 and 0", server, mine, others)
	}
	seriesAsk(t, next, server, "st.example.org.", dns.TypeA, 1)
	wantAnswers(t, labels, 4, "kept member after the new block's first answer")
}

// wantAnswers fails the test unless the answers_total series whose labels include
// labels reads want (0: no such series) in a scrape; what says which series it is.
func wantAnswers(t *testing.T, labels map[string]string, want float64, what string) {
	t.Helper()
	if got := gatheredCounter(t, "answers_total", labels); got != want {
		t.Errorf("%s: answers_total%v = %v, want %v", what, labels, got, want)
	}
}
