package healthroute

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/healthroute/healthroute/routing"
)

// forgetAnswerCounts drops every answer count of server, so that a test's blocks leave no
// series behind for later tests' scrapes.
func forgetAnswerCounts(t *testing.T, server string) {
	t.Cleanup(func() {
		shared.counting.mu.Lock()
		shared.counting.all = slices.DeleteFunc(shared.counting.all, func(qc *queryCounters) bool { return qc.server == server })
		shared.counting.mu.Unlock()
		for _, f := range []*answerFamily{answersTotal, lastResortTotal} {
			f.mu.Lock()
			for k := range f.extra {
				if k[0] == server {
					delete(f.extra, k)
				}
			}
			f.mu.Unlock()
		}
	})
}

// gatherDefault scrapes the default registry as the prometheus plugin does: a series
// reported twice fails the whole scrape.
func gatherDefault(t *testing.T) {
	t.Helper()
	if _, err := prometheus.DefaultGatherer.Gather(); err != nil {
		t.Fatalf("scrape failed: %v", err)
	}
}

// TestAnswerSeriesReloadChangesZones: a reload that adds a zone to the block (the zones
// are no longer equal, but have one in common) must neither fail the scrape with a
// series reported twice nor lose the kept member's count, whether the old block shut
// down before or after the new one's first answer.
func TestAnswerSeriesReloadChangesZones(t *testing.T) {
	for _, tc := range []struct {
		name          string
		server        string
		shutdownFirst bool
	}{
		{"old block shut down first", "dns://127.0.0.1:5391", true},
		{"new block answered first", "dns://127.0.0.1:5392", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forgetAnswerCounts(t, tc.server)
			labels := map[string]string{"server": tc.server, "zone": "example.org.", "record": "rz.example.org.", "member": "keep"}
			old := testHandler(t, `healthroute example.org. {
				record rz.example.org. weighted {
					weight 10 A 192.0.2.1 id keep
				}
			}`)
			seriesAsk(t, old, tc.server, "rz.example.org.", dns.TypeA, 3)
			next := testHandler(t, `healthroute example.org. example.net. {
				record rz.example.org. weighted {
					weight 10 A 192.0.2.1 id keep
				}
				record rz.example.net. simple {
					A 192.0.2.2
				}
			}`)
			if tc.shutdownFirst {
				if err := old.OnShutdown(); err != nil {
					t.Fatal(err)
				}
			}
			seriesAsk(t, next, tc.server, "rz.example.org.", dns.TypeA, 2)
			if !tc.shutdownFirst {
				if err := old.OnShutdown(); err != nil {
					t.Fatal(err)
				}
			}
			gatherDefault(t)
			if got := gatheredCounter(t, "answers_total", labels); got != 5 {
				t.Errorf("kept member after a reload that added a zone = %v, want 3 + 2", got)
			}
		})
	}
}

// TestAnswerSeriesAliasSharesID: a set identifier may be given both to a member of one
// type and to an alias member of another type of the same record set (they are in
// different type groups). The two carry the same labels, so they must be one series:
// a reload's block adopting the old counts must not put them in a second series that
// the scrape then reports beside the first.
func TestAnswerSeriesAliasSharesID(t *testing.T) {
	const server = "dns://127.0.0.1:5393"
	forgetAnswerCounts(t, server)
	block := `healthroute {
		record ai.example.org. weighted {
			weight 10 A 192.0.2.1 id x
			weight 10 alias ai-t.example.org. AAAA id x
		}
		record ai-t.example.org. simple {
			AAAA 2001:db8::1
		}
	}`
	old := testHandler(t, block)
	seriesAsk(t, old, server, "ai.example.org.", dns.TypeA, 2)
	next := testHandler(t, block)
	seriesAsk(t, next, server, "ai.example.org.", dns.TypeA, 1) // adopts the old counts
	if err := old.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	gatherDefault(t)
	labels := map[string]string{"server": server, "zone": "example.org.", "record": "ai.example.org.", "member": "x"}
	if got := gatheredCounter(t, "answers_total", labels); got != 3 {
		t.Errorf("answers_total of member x = %v, want 2 + 1", got)
	}
	if err := next.OnShutdown(); err != nil {
		t.Fatal(err)
	}
}

// TestAnswerSeriesExtraThenDense: an alias into another zone of the block is counted in
// the map by the query's zone; after a reload that drops the target's zone (the
// target name now lies in the aliasing name's zone) the same labels are counted in
// the new block's series. The scrape must report them once, with both counts.
func TestAnswerSeriesExtraThenDense(t *testing.T) {
	const server = "dns://127.0.0.1:5394"
	forgetAnswerCounts(t, server)
	records := `
		record ed.example.org. simple {
			alias ed.sub.example.org.
		}
		record ed.sub.example.org. weighted {
			weight 10 A 192.0.2.1 id m
		}
	}`
	old := testHandler(t, `healthroute example.org. sub.example.org. {`+records)
	seriesAsk(t, old, server, "ed.example.org.", dns.TypeA, 2)
	if err := old.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	next := testHandler(t, `healthroute example.org. {`+records)
	seriesAsk(t, next, server, "ed.example.org.", dns.TypeA, 1)
	gatherDefault(t)
	labels := map[string]string{"server": server, "zone": "example.org.", "record": "ed.sub.example.org.", "member": "m"}
	if got := gatheredCounter(t, "answers_total", labels); got != 3 {
		t.Errorf("answers_total through the alias = %v, want 2 + 1", got)
	}
	if err := next.OnShutdown(); err != nil {
		t.Fatal(err)
	}
}

// TestAnswerSeriesLiveSiblings: two blocks on one server with the same zones and records
// (a server block with two keys gets a block per key) both answer; the second adopts
// the first's counts on its first answer while the first keeps answering. Every
// answer is counted once, and a scrape reports each series once, before and after
// both shut down.
func TestAnswerSeriesLiveSiblings(t *testing.T) {
	const server = "dns://127.0.0.1:5395"
	forgetAnswerCounts(t, server)
	block := `healthroute example.org. example.net. {
		record ls.example.org. weighted {
			weight 10 A 192.0.2.1 id a
		}
		record ls.example.net. weighted {
			weight 10 A 192.0.2.2 id b
		}
	}`
	one, two := testHandler(t, block), testHandler(t, block)
	seriesAsk(t, one, server, "ls.example.org.", dns.TypeA, 2)
	seriesAsk(t, two, server, "ls.example.net.", dns.TypeA, 3)
	seriesAsk(t, one, server, "ls.example.org.", dns.TypeA, 1)
	seriesAsk(t, two, server, "ls.example.org.", dns.TypeA, 1)
	gatherDefault(t)
	a := map[string]string{"server": server, "zone": "example.org.", "record": "ls.example.org.", "member": "a"}
	b := map[string]string{"server": server, "zone": "example.net.", "record": "ls.example.net.", "member": "b"}
	if got := gatheredCounter(t, "answers_total", a); got != 4 {
		t.Errorf("member a = %v, want 4", got)
	}
	if got := gatheredCounter(t, "answers_total", b); got != 3 {
		t.Errorf("member b = %v, want 3", got)
	}
	for _, h := range []*HealthRoute{one, two} {
		if err := h.OnShutdown(); err != nil {
			t.Fatal(err)
		}
	}
	gatherDefault(t)
	if got := gatheredCounter(t, "answers_total", a); got != 4 {
		t.Errorf("member a after both shut down = %v, want 4", got)
	}
}

// TestAnswerSeriesChainedReloads: three generations, the oldest still answering after the
// newest adopted the middle one: its answers reach the newest through the chain,
// none lost or counted twice, under concurrent answers and scrapes (-race).
func TestAnswerSeriesChainedReloads(t *testing.T) {
	const server = "dns://127.0.0.1:5396"
	forgetAnswerCounts(t, server)
	block := func(extra string) string {
		return `healthroute {
		` + extra + `
		record cr.example.org. failover {
			primary A 192.0.2.1 id p
			secondary A 192.0.2.2 id s
		}
	}`
	}
	gens := []*HealthRoute{
		testHandler(t, block("")),
		testHandler(t, block(`record cr-b.example.org. simple {
			A 192.0.2.3
		}`)),
		testHandler(t, block(`record cr-c.example.org. simple {
			A 192.0.2.4
		}
		record cr-d.example.org. simple {
			A 192.0.2.5
		}`)),
	}
	const perGen, rounds = 50, 3
	done := make(chan struct{})
	scraped := make(chan error, 1)
	go func() { // scrapes while the generations answer and adopt
		defer close(scraped)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := prometheus.DefaultGatherer.Gather(); err != nil {
				scraped <- err
				return
			}
		}
	}()
	for i := range gens {
		finished := make(chan struct{}, i+1)
		for _, h := range gens[:i+1] { // every live generation answers at once
			go func() {
				defer func() { finished <- struct{}{} }()
				for range rounds {
					seriesAskQuiet(h, server, "cr.example.org.", dns.TypeA, perGen)
				}
			}()
		}
		for range i + 1 {
			<-finished
		}
	}
	close(done)
	if err := <-scraped; err != nil {
		t.Fatalf("a scrape during the reloads failed: %v", err)
	}
	want := float64(perGen * rounds * (1 + 2 + 3))
	p := map[string]string{"server": server, "zone": "example.org.", "record": "cr.example.org.", "member": "p"}
	if got := gatheredCounter(t, "answers_total", p); got != want {
		t.Errorf("member p with three generations live = %v, want %v", got, want)
	}
	for _, h := range gens[:2] {
		if err := h.OnShutdown(); err != nil {
			t.Fatal(err)
		}
	}
	gatherDefault(t)
	if got := gatheredCounter(t, "answers_total", p); got != want {
		t.Errorf("member p after the old generations shut down = %v, want %v", got, want)
	}
	seriesAskQuiet(gens[0], server, "cr.example.org.", dns.TypeA, 1) // a query in flight at the oldest
	if got := gatheredCounter(t, "answers_total", p); got != want+1 {
		t.Errorf("member p after the oldest answered once more = %v, want %v", got, want+1)
	}
	if err := gens[2].OnShutdown(); err != nil {
		t.Fatal(err)
	}
}

// seriesAskQuiet is seriesAsk for goroutines: errors are not the test's subject.
func seriesAskQuiet(h *HealthRoute, server, name string, qtype uint16, n int) {
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: server})
	for range n {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), m)
	}
}

// sharedMembersBlock has record sets whose members are written alike (shared Members
// and member lists), one of them with a failed check.
const sharedMembersBlock = `healthroute {
	check down tcp 127.0.0.1:9
	record sv-a.example.org. weighted {
		weight 10 A 192.0.2.1 check down id one
		weight 10 A 192.0.2.2 192.0.2.3 id two
	}
	record sv-b.example.org. weighted {
		weight 10 A 192.0.2.1 check down id one
		weight 10 A 192.0.2.2 192.0.2.3 id two
	}
	record sv-c.example.org. failover {
		primary A 192.0.2.1 check down id one
		secondary A 192.0.2.2 192.0.2.3 id two
	}
}`

// TestSharedMembersInViews: record sets that share their members and member list are
// still told apart by the status view and explain, each under its own name, with
// its own policy and members.
func TestSharedMembersInViews(t *testing.T) {
	r, cfg := testResolver(t, sharedMembersBlock)
	if &cfg.Records[0].Members[0] != &cfg.Records[1].Members[0] {
		t.Fatal("sv-a and sv-b do not share their member list: the test does not test sharing")
	}
	r.Publish(snapshot(cfg, "down"))
	recs := r.Records()
	if len(recs) != 3 {
		t.Fatalf("Records() = %d groups, want 3", len(recs))
	}
	for i, want := range []struct{ name, policy string }{
		{"sv-a.example.org.", "weighted"}, {"sv-b.example.org.", "weighted"}, {"sv-c.example.org.", "failover"},
	} {
		v := recs[i]
		if v.Name != want.name || v.Policy != want.policy || len(v.Members) != 2 || v.Members[0].ID != "one" || v.Members[1].ID != "two" {
			t.Errorf("Records()[%d] = %+v, want %s %s with members one and two", i, v, want.name, want.policy)
		}
		if v.Members[0].Healthy || !v.Members[1].Healthy {
			t.Errorf("Records()[%d] health = %v/%v, want one down, two up", i, v.Members[0].Healthy, v.Members[1].Healthy)
		}
	}
	for _, name := range []string{"sv-a.example.org.", "sv-b.example.org.", "sv-c.example.org."} {
		ans, tr := r.Explain(routing.Query{Name: name, Type: dns.TypeA, Client: testClient})
		if len(tr.Steps) == 0 || tr.Steps[0].Record != name {
			t.Errorf("explain %s: steps %+v, want the first under its own name", name, tr.Steps)
		}
		for _, rr := range ans.RRs {
			if rr.Header().Name != name {
				t.Errorf("explain %s answered %v: owner is another record set's", name, rr)
			}
		}
	}
}

// TestResolverTwiceOnOneConfig: a second Resolver built on one Config (numbering and
// sharing run again) answers exactly as the first and numbers the same series.
func TestResolverTwiceOnOneConfig(t *testing.T) {
	r1, cfg := testResolver(t, sharedMembersBlock)
	r2 := newResolver(cfg)
	r2.Rand = rand.New(rand.NewPCG(1, 2)).Uint64N
	p1, p2 := r1.Plan, r2.Plan
	if p1.SeriesCount != p2.SeriesCount || !slices.Equal(p1.MemberSeries, p2.MemberSeries) {
		t.Errorf("series of a second resolver = %v %v, want %v %v", p2.SeriesCount, p2.MemberSeries, p1.SeriesCount, p1.MemberSeries)
	}
	for _, r := range []*routing.Resolver{r1, r2} {
		r.Publish(snapshot(cfg, "down"))
	}
	for range 50 {
		for _, name := range []string{"sv-a.example.org.", "sv-b.example.org.", "sv-c.example.org."} {
			q := routing.Query{Name: name, Type: dns.TypeA, Client: testClient}
			a1, a2 := resolveAnswer(r1, q), resolveAnswer(r2, q)
			if fmt.Sprint(a1.RRs) != fmt.Sprint(a2.RRs) || a1.LeafSet.RecordSet != a2.LeafSet.RecordSet || a1.Leaf.Series != a2.Leaf.Series {
				t.Fatalf("%s: first resolver %v (series %d), second %v (series %d)", name, a1.RRs, a1.Leaf.Series, a2.RRs, a2.Leaf.Series)
			}
		}
	}
}

// TestAnswerSeriesLabels: answers of wildcards, a CNAME chase, a name with a
// multivalue block beside a block whose member is literally named "multivalue", an
// NS delegation (a simple record: no series) and several zones in one block are counted under the right labels,
// once each, on each of two servers, and the scrape reports no series twice.
func TestAnswerSeriesLabels(t *testing.T) {
	servers := []string{"dns://127.0.0.1:5397", "dns://[::1]:5397"}
	for _, s := range servers {
		forgetAnswerCounts(t, s)
	}
	h := testHandler(t, `healthroute example.org. sub.example.org. example.net. {
		record *.w.example.org. weighted {
			weight 10 A 192.0.2.1 id wa
		}
		record *.example.net. weighted {
			weight 10 CNAME mvn.example.org. id cn
		}
		record mvn.example.org. multivalue {
			value A 192.0.2.2 id x
			value A 192.0.2.3 id y
		}
		record mvn.example.org. weighted {
			weight 10 AAAA 2001:db8::2 id multivalue
		}
		record deleg.sub.example.org. simple {
			NS ns.deleg.sub.example.org.
		}
		record ns.deleg.sub.example.org. simple {
			A 192.0.2.53 id glue
		}
	}`)
	t.Cleanup(func() { h.OnShutdown() })
	for i, s := range servers {
		seriesAsk(t, h, s, "a.w.example.org.", dns.TypeA, 1+i)
		seriesAsk(t, h, s, "b.c.w.example.org.", dns.TypeA, 1)
		seriesAsk(t, h, s, "q.example.net.", dns.TypeA, 2) // counts the CNAME, not the chased set
		seriesAsk(t, h, s, "mvn.example.org.", dns.TypeA, 3)
		seriesAsk(t, h, s, "mvn.example.org.", dns.TypeAAAA, 4)
		seriesAsk(t, h, s, "x.deleg.sub.example.org.", dns.TypeA, 5)
	}
	gatherDefault(t)
	for i, s := range servers {
		for _, tc := range []struct {
			zone, record, member string
			want                 float64
		}{
			{"example.org.", "*.w.example.org.", "wa", float64(2 + i)},
			{"example.net.", "*.example.net.", "cn", 2},
			{"example.org.", "mvn.example.org.", "multivalue", 7}, // the A set and the AAAA member of that id
			{"sub.example.org.", "deleg.sub.example.org.", "", 0}, // simple, no check: its answer cannot change, no series
			{"sub.example.org.", "ns.deleg.sub.example.org.", "glue", 0},
		} {
			labels := map[string]string{"server": s, "zone": tc.zone, "record": tc.record}
			if tc.member != "" {
				labels["member"] = tc.member
			}
			if got := gatheredCounter(t, "answers_total", labels); got != tc.want {
				t.Errorf("answers_total%v = %v, want %v", labels, got, tc.want)
			}
		}
	}
}

// TestAnswerSeriesReloadEachBlock reloads each of several tricky blocks into itself (the
// new block adopts the old one's counts) with both answering, every check healthy and
// then down: every scrape must succeed, and a name's answers must add up across the
// two generations.
func TestAnswerSeriesReloadEachBlock(t *testing.T) {
	blocks := []string{
		"healthroute {\ncheck c tcp 127.0.0.1:9\nrecord m.example.org. multivalue {\nvalue A 192.0.2.1 id multivalue check c\n}\nrecord m.example.org. weighted {\nweight 1 AAAA 2001:db8::1 id multivalue\n}\n}",
		"healthroute example.org. example.net. {\nrecord a.example.net. simple {\nalias b.example.org.\n}\nrecord b.example.org. weighted {\nweight 1 A 192.0.2.1 id x\nweight 1 AAAA 2001:db8::1 id x\n}\n}",
		"healthroute {\nrecord s.example.org. failover {\nprimary A 192.0.2.1 id x\nprimary alias t.example.org. AAAA id x\nprimary alias t.example.org. TXT id x\n}\nrecord t.example.org. simple {\nAAAA 2001:db8::1\nTXT hi\n}\n}",
		"healthroute {\ncheck c tcp 127.0.0.1:9\nrecord *.example.org. weighted {\nweight 1 A 192.0.2.1 id x check c\nweight 1 alias t.example.org. id x\n}\nrecord t.example.org. simple {\nTXT hi\n}\n}",
	}
	for i, block := range blocks {
		server := fmt.Sprintf("dns://127.0.0.1:54%02d", i)
		forgetAnswerCounts(t, server)
		old, next := testHandler(t, block), testHandler(t, block)
		ask := func(h *HealthRoute) {
			for _, rs := range h.cfg.Records {
				for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
					seriesAskQuiet(h, server, strings.Replace(rs.Name, "*", "x", 1), qt, 1)
				}
			}
		}
		var down []string
		for n := range old.cfg.Checks {
			down = append(down, n)
		}
		ask(old)
		ask(next)
		for _, h := range []*HealthRoute{old, next} {
			h.resolver.Publish(snapshot(h.cfg, down...))
		}
		ask(old)
		ask(next)
		if _, err := prometheus.DefaultGatherer.Gather(); err != nil {
			t.Fatalf("block %d: scrape with both generations answering: %v", i, err)
		}
		old.OnShutdown()
		ask(old) // a query in flight
		ask(next)
		if _, err := prometheus.DefaultGatherer.Gather(); err != nil {
			t.Fatalf("block %d: scrape after the old generation shut down: %v", i, err)
		}
		next.OnShutdown()
	}
}
