package healthroute

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/routing"
)

const checks = `
	check c1 tcp 127.0.0.1:1
	check c2 tcp 127.0.0.1:2
	check c3 tcp 127.0.0.1:3
	check c4 tcp 127.0.0.1:4
`

// TestWeightedShares measures traffic shares over many queries (docs/routing.md#weighted).
func TestWeightedShares(t *testing.T) {
	const n = 30000
	tests := []struct {
		name string
		body string
		down []string
		want map[string]float64 // answer -> expected share
	}{
		{"proportional", `weight 10 A 192.0.2.1 check c1
			weight 20 A 192.0.2.2 check c2
			weight 20 A 192.0.2.3 check c3`, nil,
			map[string]float64{"192.0.2.1": 0.2, "192.0.2.2": 0.4, "192.0.2.3": 0.4}},
		{"SIMPLECFG example: unhealthy record drops out of the total", `weight 10 A 192.0.2.1 check c1
			weight 20 A 192.0.2.2 check c2
			weight 20 A 192.0.2.3 check c3`, []string{"c3"},
			map[string]float64{"192.0.2.1": 1.0 / 3, "192.0.2.2": 2.0 / 3}},
		{"1 and 255", `weight 1 A 192.0.2.1
			weight 255 A 192.0.2.2`, nil,
			map[string]float64{"192.0.2.1": 1.0 / 256, "192.0.2.2": 255.0 / 256}},
		{"weight 0 never answers while a nonzero record is healthy", `weight 0 A 192.0.2.1
			weight 5 A 192.0.2.2 check c2`, nil,
			map[string]float64{"192.0.2.2": 1}},
		{"all weights 0: equal shares", `weight 0 A 192.0.2.1
			weight 0 A 192.0.2.2`, nil,
			map[string]float64{"192.0.2.1": 0.5, "192.0.2.2": 0.5}},
		{"nonzero all unhealthy: healthy zero weights uniformly", `weight 0 A 192.0.2.1 check c1
			weight 0 A 192.0.2.2 check c2
			weight 5 A 192.0.2.3 check c3`, []string{"c3"},
			map[string]float64{"192.0.2.1": 0.5, "192.0.2.2": 0.5}},
		{"all unhealthy: last resort by weight over nonzero", `weight 0 A 192.0.2.1 check c1
			weight 10 A 192.0.2.2 check c2
			weight 30 A 192.0.2.3 check c3`, []string{"c1", "c2", "c3"},
			map[string]float64{"192.0.2.2": 0.25, "192.0.2.3": 0.75}},
		{"all unhealthy, all zero: uniform", `weight 0 A 192.0.2.1 check c1
			weight 0 A 192.0.2.2 check c2`, []string{"c1", "c2"},
			map[string]float64{"192.0.2.1": 0.5, "192.0.2.2": 0.5}},
		{"a record without a check keeps the group out of last resort", `weight 10 A 192.0.2.1 check c1
			weight 10 A 192.0.2.2`, []string{"c1"},
			map[string]float64{"192.0.2.2": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, fmt.Sprintf("healthroute {\n%s\nrecord w.example.org. weighted {\n%s\n}\n}", checks, tc.body))
			r.Publish(snapshot(cfg, tc.down...))
			got := shares(r, "w.example.org.", dns.TypeA, n)
			for ans := range got {
				if _, ok := tc.want[ans]; !ok {
					t.Errorf("answer %q (%d times) not expected", ans, got[ans])
				}
			}
			for ans, p := range tc.want {
				share := float64(got[ans]) / n
				// 5 standard deviations of a binomial share, at least 0.002.
				tol := math.Max(5*math.Sqrt(p*(1-p)/n), 0.002)
				if math.Abs(share-p) > tol {
					t.Errorf("%s: share %.4f, want %.4f ± %.4f", ans, share, p, tol)
				}
			}
		})
	}
}

// TestFailover covers every row of docs/routing.md#failover.
func TestFailover(t *testing.T) {
	tests := []struct {
		name      string
		secondary string
		down      []string
		want      string
	}{
		{"primary healthy", "check c2", nil, "192.0.2.1"},
		{"primary healthy, secondary unhealthy", "check c2", []string{"c2"}, "192.0.2.1"},
		{"primary unhealthy, secondary healthy", "check c2", []string{"c1"}, "198.51.100.1"},
		{"both unhealthy: primary", "check c2", []string{"c1", "c2"}, "192.0.2.1"},
		{"primary unhealthy, secondary without check", "", []string{"c1"}, "198.51.100.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, fmt.Sprintf(`healthroute {%s
				record f.example.org. failover {
					primary A 192.0.2.1 check c1
					secondary A 198.51.100.1 %s
				}
			}`, checks, tc.secondary))
			r.Publish(snapshot(cfg, tc.down...))
			if got := values(r, "f.example.org.", dns.TypeA); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("only a primary, unhealthy", func(t *testing.T) {
		r, cfg := testResolver(t, `healthroute {`+checks+`
			record f.example.org. failover {
				primary A 192.0.2.1 check c1
			}
		}`)
		r.Publish(snapshot(cfg, "c1"))
		if got := values(r, "f.example.org.", dns.TypeA); got != "192.0.2.1" {
			t.Errorf("got %s, want the primary (last resort)", got)
		}
	})
}

// TestMultivalue covers docs/routing.md#multivalue.
func TestMultivalue(t *testing.T) {
	block := func(n int, checked bool) string {
		s := "healthroute {\n"
		for i := range n {
			s += fmt.Sprintf("check m%d tcp 127.0.0.1:%d\n", i, 1000+i)
		}
		s += "record m.example.org. multivalue {\n"
		for i := range n {
			opt := ""
			if checked {
				opt = fmt.Sprintf("check m%d", i)
			}
			s += fmt.Sprintf("value A 192.0.2.%d %s\n", i+1, opt)
		}
		return s + "}\n}\n"
	}
	down := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("m%d", i))
		}
		return out
	}
	tests := []struct {
		name       string
		members    int
		down       int
		wantCount  int
		onlyHealth bool
	}{
		{"3 healthy: all 3", 3, 0, 3, true},
		{"8 healthy: all 8", 8, 0, 8, true},
		{"12 healthy: exactly 8", 12, 0, 8, true},
		{"12, 6 unhealthy: the 6 healthy", 12, 6, 6, true},
		{"12, all unhealthy: 8 of them", 12, 12, 8, false},
		{"5, all unhealthy: all 5", 5, 5, 5, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, block(tc.members, true))
			r.Publish(snapshot(cfg, down(tc.down)...))
			seen := map[string]bool{}
			for range 200 {
				ans := resolveAnswer(r, routing.Query{Name: "m.example.org.", Type: dns.TypeA, Client: testClient})
				vals := rrValues(ans.RRs)
				if len(vals) != tc.wantCount {
					t.Fatalf("got %d records %v, want %d", len(vals), vals, tc.wantCount)
				}
				distinct := map[string]bool{}
				for _, v := range vals {
					if distinct[v] {
						t.Fatalf("duplicate %s in %v", v, vals)
					}
					distinct[v] = true
					seen[v] = true
					var i int
					fmt.Sscanf(v, "192.0.2.%d", &i)
					if tc.onlyHealth && i-1 < tc.down {
						t.Fatalf("unhealthy record %s answered", v)
					}
				}
			}
			if tc.members > 8 && tc.members-tc.down > 8 && len(seen) != tc.members-tc.down {
				t.Errorf("over 200 answers saw %d distinct records, want every healthy one (%d)", len(seen), tc.members-tc.down)
			}
		})
	}
}

// treeBlock is the alias-tree example of Route 53's documentation, with failover at the top.
const treeBlock = `healthroute {` + checks + `
	record www.example.org. failover {
		primary   alias east.example.org.
		secondary alias west.example.org.
	}
	record east.example.org. weighted {
		weight 10 A 192.0.2.1 check c1
		weight 10 A 192.0.2.2 check c2
	}
	record west.example.org. weighted {
		weight 10 A 198.51.100.1 check c3
		weight 10 A 198.51.100.2 check c4
	}
}`

// TestAliasTree covers evaluate target health and nested last resort (1.2, 1.11).
func TestAliasTree(t *testing.T) {
	tests := []struct {
		name  string
		block string
		down  []string
		want  map[string]bool
	}{
		{"east healthy", treeBlock, nil, map[string]bool{"192.0.2.1": true, "192.0.2.2": true}},
		{"east half down: the healthy one", treeBlock, []string{"c1"}, map[string]bool{"192.0.2.2": true}},
		{"east all down: backs out to west", treeBlock, []string{"c1", "c2"}, map[string]bool{"198.51.100.1": true, "198.51.100.2": true}},
		{"everything down: primary branch, its own last resort", treeBlock, []string{"c1", "c2", "c3", "c4"},
			map[string]bool{"192.0.2.1": true, "192.0.2.2": true}},
		{"ETH no: stays in the branch", `healthroute {` + checks + `
			record www.example.org. failover {
				primary   alias east.example.org. evaluate_target_health no
				secondary alias west.example.org.
			}
			record east.example.org. weighted {
				weight 10 A 192.0.2.1 check c1
			}
			record west.example.org. weighted {
				weight 10 A 198.51.100.1 check c3
			}
		}`, []string{"c1"}, map[string]bool{"192.0.2.1": true}},
		{"alias with its own failing check and ETH", `healthroute {` + checks + `
			record www.example.org. failover {
				primary   alias east.example.org. check c4
				secondary alias west.example.org.
			}
			record east.example.org. weighted {
				weight 10 A 192.0.2.1 check c1
			}
			record west.example.org. weighted {
				weight 10 A 198.51.100.1 check c3
			}
		}`, []string{"c4"}, map[string]bool{"198.51.100.1": true}},
		{"nested aliases inherit health", `healthroute {` + checks + `
			record www.example.org. failover {
				primary   alias mid.example.org.
				secondary A 198.51.100.9
			}
			record mid.example.org. simple {
				alias leaf.example.org.
			}
			record leaf.example.org. simple {
				A 192.0.2.1 check c1
			}
		}`, []string{"c1"}, map[string]bool{"198.51.100.9": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := testResolver(t, tc.block)
			r.Publish(snapshot(cfg, tc.down...))
			got := shares(r, "www.example.org.", dns.TypeA, 400)
			for ans := range got {
				if !tc.want[ans] {
					t.Errorf("answer %s not expected (want one of %v)", ans, tc.want)
				}
			}
			for w := range tc.want {
				if got[w] == 0 {
					t.Errorf("answer %s never seen in 400 queries", w)
				}
			}
		})
	}
}

// TestAnswers covers docs/routing.md#answers: owners, types, negative answers, wildcards.
func TestAnswers(t *testing.T) {
	r, cfg := testResolver(t, `healthroute {`+checks+`
		ttl 42
		record www.example.org. simple {
			A 192.0.2.1 192.0.2.2 check c1
			AAAA 2001:db8::1
		}
		record v4.example.org. failover {
			primary A 192.0.2.10 check c1
			secondary A 192.0.2.11
			primary AAAA 2001:db8::10 check c2
			secondary AAAA 2001:db8::11
		}
		record top.example.org. weighted {
			weight 1 alias www.example.org.
		}
		record c.example.org. weighted {
			weight 1 CNAME target.example.net.
		}
		record *.wild.example.org. simple {
			A 192.0.2.50
		}
		record deep.a.b.example.org. simple {
			A 192.0.2.60
		}
	}`)
	r.Publish(snapshot(cfg, "c1")) // A groups at v4 fail over; AAAA does not
	tests := []struct {
		name  string
		qtype uint16
		rcode int
		owner string // "" = no answer
		want  string
	}{
		{"www.example.org.", dns.TypeA, dns.RcodeSuccess, "www.example.org.", "192.0.2.1,192.0.2.2"},
		{"www.example.org.", dns.TypeAAAA, dns.RcodeSuccess, "www.example.org.", "2001:db8::1"},
		{"www.example.org.", dns.TypeMX, dns.RcodeSuccess, "", ""},
		{"v4.example.org.", dns.TypeA, dns.RcodeSuccess, "v4.example.org.", "192.0.2.11"},
		{"v4.example.org.", dns.TypeAAAA, dns.RcodeSuccess, "v4.example.org.", "2001:db8::10"},
		{"top.example.org.", dns.TypeA, dns.RcodeSuccess, "top.example.org.", "192.0.2.1,192.0.2.2"},
		{"top.example.org.", dns.TypeAAAA, dns.RcodeSuccess, "top.example.org.", "2001:db8::1"},
		{"c.example.org.", dns.TypeA, dns.RcodeSuccess, "c.example.org.", "target.example.net."},
		{"c.example.org.", dns.TypeTXT, dns.RcodeSuccess, "c.example.org.", "target.example.net."},
		{"x.wild.example.org.", dns.TypeA, dns.RcodeSuccess, "x.wild.example.org.", "192.0.2.50"},
		{"y.x.wild.example.org.", dns.TypeA, dns.RcodeSuccess, "y.x.wild.example.org.", "192.0.2.50"},
		{"wild.example.org.", dns.TypeA, dns.RcodeSuccess, "", ""},   // empty non-terminal: NODATA
		{"a.b.example.org.", dns.TypeA, dns.RcodeSuccess, "", ""},    // empty non-terminal
		{"nope.example.org.", dns.TypeA, dns.RcodeNameError, "", ""}, // NXDOMAIN
		{"x.deep.a.b.example.org.", dns.TypeA, dns.RcodeNameError, "", ""},
		{"example.org.", dns.TypeA, dns.RcodeSuccess, "", ""}, // apex: NODATA
		{"example.org.", dns.TypeSOA, dns.RcodeSuccess, "example.org.", ""},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s", tc.name, dns.TypeToString[tc.qtype]), func(t *testing.T) {
			ans := resolveAnswer(r, routing.Query{Name: tc.name, Type: tc.qtype, Client: testClient})
			if ans.Rcode != tc.rcode {
				t.Fatalf("rcode %s, want %s", dns.RcodeToString[ans.Rcode], dns.RcodeToString[tc.rcode])
			}
			if tc.owner == "" {
				if len(ans.RRs) != 0 {
					t.Fatalf("answer %v, want none", ans.RRs)
				}
				if len(ans.Ns) != 1 || ans.Ns[0].Header().Rrtype != dns.TypeSOA || ans.Ns[0].Header().Name != "example.org." {
					t.Fatalf("authority %v, want the zone's SOA", ans.Ns)
				}
				return
			}
			if len(ans.RRs) == 0 {
				t.Fatal("no answer")
			}
			for _, rr := range ans.RRs {
				if rr.Header().Name != tc.owner || rr.Header().Ttl != 42 {
					t.Errorf("RR %v: want owner %s and TTL 42", rr, tc.owner)
				}
			}
			if tc.want != "" {
				if got := strings.Join(rrValues(ans.RRs), ","); got != tc.want {
					t.Errorf("got %s, want %s", got, tc.want)
				}
			}
		})
	}
}

// TestPublishedRRsAreNotShared checks that a downstream append cannot write into the
// Resolver's prebuilt slices.
func TestPublishedRRsAreNotShared(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		record www.example.org. simple {
			A 192.0.2.1 192.0.2.2
		}
	}`)
	a := resolveAnswer(r, routing.Query{Name: "www.example.org.", Type: dns.TypeA}).RRs
	_ = append(a, &dns.A{})
	b := resolveAnswer(r, routing.Query{Name: "www.example.org.", Type: dns.TypeA}).RRs
	if len(b) != 2 || cap(b) != 2 {
		t.Fatalf("prebuilt answer has len %d cap %d, want 2 and 2", len(b), cap(b))
	}
}

// BenchmarkResolve measures selection in a two-level alias tree (failover -> weighted,
// as in docs/routing.md#evaluate-target-health) with the primary branch failed; it must not allocate.
func BenchmarkResolve(b *testing.B) {
	r, cfg := testResolver(b, treeBlock)
	r.Publish(snapshot(cfg, "c1", "c2"))
	r.Rand = nil // the production random source
	q := routing.Query{Name: "www.example.org.", Type: dns.TypeA, Client: testClient}
	b.ReportAllocs()
	for b.Loop() {
		if len(resolveAnswer(r, q).RRs) != 1 {
			b.Fatal("no answer")
		}
	}
}

// TestPublishSkipsUnchangedRouting: a snapshot that only adds first results keeps the
// compiled state; one that flips a check recompiles.
func TestPublishSkipsUnchangedRouting(t *testing.T) {
	r, cfg := testResolver(t, treeBlock)
	fp := cfg.Checks["c1"].Fingerprint()
	r.Publish(health.NewSnapshot(1, map[string]health.Status{fp: {}}))
	before := r.Table.Load()
	r.Publish(health.NewSnapshot(2, map[string]health.Status{fp: {Seen: true}}))
	after := r.Table.Load()
	if &after.States[0] != &before.States[0] || after.Snap.Gen != 2 {
		t.Error("a first result alone recompiled the table, or the new snapshot was not taken")
	}
	r.Publish(health.NewSnapshot(3, map[string]health.Status{fp: {Seen: true, Down: true}}))
	if got := r.Table.Load(); &got.States[0] == &after.States[0] || got.State(got.Plan.Names["east.example.org."].A.ID).OK[0] {
		t.Error("a failed check did not recompile the table")
	}
}

// TestOverrides: an operator override forces a check either way, reaches calculated
// parents, and "none" hands the check back to its probes.
func TestOverrides(t *testing.T) {
	r, cfg := testResolver(t, `healthroute {`+checks+`
		check both calculated c1 c2
		record f.example.org. failover {
			primary A 192.0.2.1 check c1
			secondary A 198.51.100.1
		}
		record g.example.org. failover {
			primary A 192.0.2.2 check both
			secondary A 198.51.100.2
		}
	}`)
	r.Publish(snapshot(cfg))
	steps := []struct {
		over   map[string]bool
		f, g   string
		reason string
	}{
		{nil, "192.0.2.1", "192.0.2.2", "all healthy"},
		{map[string]bool{"c1": false}, "198.51.100.1", "198.51.100.2", "c1 forced down, and with it the calculated parent"},
		{map[string]bool{"both": true, "c1": false}, "198.51.100.1", "192.0.2.2", "the parent forced up"},
		{nil, "192.0.2.1", "192.0.2.2", "overrides removed"},
	}
	for _, st := range steps {
		r.SetOverrides(st.over)
		if f, g := values(r, "f.example.org.", dns.TypeA), values(r, "g.example.org.", dns.TypeA); f != st.f || g != st.g {
			t.Errorf("%s: f=%s g=%s, want %s %s", st.reason, f, g, st.f, st.g)
		}
	}
	r.SetOverrides(map[string]bool{"c1": true})
	r.Publish(snapshot(cfg, "c1")) // probes fail, the override still holds
	if f := values(r, "f.example.org.", dns.TypeA); f != "192.0.2.1" {
		t.Errorf("override healthy vs failing probes: %s, want the primary", f)
	}
}

// TestValuesInRandomOrder: a member's several values come back in random order
// (docs/routing.md#simple), each answer holding all of them.
func TestValuesInRandomOrder(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		record s.example.org. simple {
			A 192.0.2.1 192.0.2.2 192.0.2.3
		}
	}`)
	first := map[string]int{}
	for range 300 {
		rrs := resolveAnswer(r, routing.Query{Name: "s.example.org.", Type: dns.TypeA, Client: testClient}).RRs
		if got := strings.Join(rrValues(rrs), ","); got != "192.0.2.1,192.0.2.2,192.0.2.3" {
			t.Fatalf("answer %s, want all three values", got)
		}
		first[rrs[0].(*dns.A).A.String()]++
	}
	if len(first) != 3 {
		t.Errorf("first values over 300 answers: %v, want each of the three", first)
	}
}

// TestApexAndLiteralWildcard: SOA at an apex that holds records, and a query for the
// wildcard owner itself.
func TestApexAndLiteralWildcard(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		record example.org. simple {
			A 192.0.2.1
		}
		record *.w.example.org. simple {
			A 192.0.2.99
		}
	}`)
	if ans := resolveAnswer(r, routing.Query{Name: "example.org.", Type: dns.TypeSOA}); len(ans.RRs) != 1 || ans.RRs[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("SOA at a populated apex: %v", ans.RRs)
	}
	if got := values(r, "example.org.", dns.TypeA); got != "192.0.2.1" {
		t.Errorf("A at the apex: %s", got)
	}
	if got := values(r, "*.w.example.org.", dns.TypeA); got != "192.0.2.99" {
		t.Errorf("the literal wildcard owner: %q, want 192.0.2.99", got)
	}
}
