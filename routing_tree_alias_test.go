package healthroute

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// aliasChain returns a block of depth record sets, each aliasing the next, the last
// answering 192.0.2.1.
func aliasChain(depth int) string {
	var b strings.Builder
	b.WriteString("healthroute {\n")
	for i := range depth - 1 {
		fmt.Fprintf(&b, "record r%d.example.org. simple {\nalias r%d.example.org.\n}\n", i, i+1)
	}
	fmt.Fprintf(&b, "record r%d.example.org. simple {\nA 192.0.2.1\n}\n}", depth-1)
	return b.String()
}

// TestAliasChainDeep: a 10,000-deep alias chain is accepted and built with one node
// per record set (the quadratic build made one per set per name above it), and every
// name of the chain answers the leaf under its own name.
func TestAliasChainDeep(t *testing.T) {
	const depth = 10_000
	r, _ := testResolver(t, aliasChain(depth))
	if n := len(r.Plan.Nodes); n != depth {
		t.Fatalf("plan has %d nodes for %d record sets, want one each", n, depth)
	}
	for _, i := range []int{0, 1, depth / 2, depth - 1} {
		name := fmt.Sprintf("r%d.example.org.", i)
		rrs := resolveAnswer(r, routing.Query{Name: name, Type: dns.TypeA, Client: testClient}).RRs
		if len(rrs) != 1 || rrs[0].Header().Name != name || rrs[0].(*dns.A).A.String() != "192.0.2.1" {
			t.Errorf("%s: answer %v, want 192.0.2.1 owned by %s", name, rrs, name)
		}
	}
}

// TestSharedGroupAnswersUnderEachName: two names aliasing one group share its node;
// each answers under its own name (single values, several values in random order,
// multivalue sets), and after the first query without allocating.
func TestSharedGroupAnswersUnderEachName(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		record a.example.org. simple {
			alias s.example.org.
		}
		record b.example.org. weighted {
			weight 1 alias s.example.org.
		}
		record s.example.org. simple {
			A 192.0.2.1 192.0.2.2
		}
		record ma.example.org. simple {
			alias m.example.org.
		}
		record m.example.org. multivalue {
			value AAAA 2001:db8::1
			value AAAA 2001:db8::2
		}
	}`)
	if r.Plan.Names["a.example.org."].A.Members[0].Child != r.Plan.Names["b.example.org."].A.Members[0].Child {
		t.Error("a and b alias s but hold different nodes for it")
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
		want  string
	}{
		{"a.example.org.", dns.TypeA, "192.0.2.1,192.0.2.2"},
		{"b.example.org.", dns.TypeA, "192.0.2.1,192.0.2.2"},
		{"s.example.org.", dns.TypeA, "192.0.2.1,192.0.2.2"},
		{"ma.example.org.", dns.TypeAAAA, "2001:db8::1,2001:db8::2"},
		{"m.example.org.", dns.TypeAAAA, "2001:db8::1,2001:db8::2"},
	} {
		q := routing.Query{Name: tc.name, Type: tc.qtype, Client: testClient}
		for range 20 { // every rotation is named right
			rrs := resolveAnswer(r, q).RRs
			if got := strings.Join(rrValues(rrs), ","); got != tc.want {
				t.Fatalf("%s: %s, want %s", tc.name, got, tc.want)
			}
			for _, rr := range rrs {
				if rr.Header().Name != tc.name {
					t.Fatalf("%s: answer owned by %s", tc.name, rr.Header().Name)
				}
			}
		}
	}
	q := routing.Query{Name: "a.example.org.", Type: dns.TypeA, Client: testClient}
	if n := testing.AllocsPerRun(100, func() { resolveAnswer(r, q) }); n != 0 {
		t.Errorf("an alias answer allocates %v times per query after the first, want 0", n)
	}
}

// BenchmarkAliasChain measures startup (parse, plan, first table) of alias chains; B/op
// grows linearly with depth (ten times the depth, about ten times the bytes).
func BenchmarkAliasChain(b *testing.B) {
	for _, depth := range []int{1_000, 10_000} {
		block := aliasChain(depth)
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newResolver(mustParse(b, block))
			}
		})
	}
}

// aliasLadder returns a block of depth levels of two failover sets, each aliasing
// both sets of the level below, over ip groups: 2^depth paths from the top.
func aliasLadder(depth int) string {
	var b strings.Builder
	b.WriteString("healthroute {\nrecord a0.example.org. ip {\ncidr 10.0.0.0/8 A 192.0.2.1\n}\nrecord b0.example.org. ip {\ncidr 10.0.0.0/8 A 192.0.2.2\n}\n")
	for i := 1; i <= depth; i++ {
		for _, x := range []string{"a", "b"} {
			fmt.Fprintf(&b, "record %s%d.example.org. failover {\nprimary alias a%d.example.org.\nsecondary alias b%d.example.org.\n}\n", x, i, i-1, i-1)
		}
	}
	b.WriteString("}")
	return b.String()
}

// TestParseRefusesExponentialAliases: judging evaluate target health into ip groups
// may try every path below a name, 2^40 here, on every query; the block is refused at
// the first record set past the limit (level 13: 2^14-1 paths), on its line.
func TestParseRefusesExponentialAliases(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{{"ladder", aliasLadder(40), 8 + 8*12,
		"record a13.example.org.: evaluate target health into geolocation or ip groups reaches more than 10000 record sets counted once per path"}})
	mustParse(t, aliasLadder(12)) // 8,191 paths: accepted
	// Static groups are judged once per table, linearly: accepted, and answered.
	r, cfg := testResolver(t, strings.ReplaceAll(aliasLadder(40), " ip {\ncidr 10.0.0.0/8", " simple {\n"))
	r.Publish(snapshot(cfg))
	if got := values(r, "a40.example.org.", dns.TypeA); got != "192.0.2.1" {
		t.Errorf("static ladder: %q, want 192.0.2.1", got)
	}
	mustParse(t, strings.ReplaceAll(aliasLadder(40), ".\n", ". evaluate_target_health no\n")) // no health judged through the branch: accepted
}
