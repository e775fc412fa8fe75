package healthroute

import (
	"context"
	"net/netip"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// selectionAllocBlock has one record set per routing policy, plus alias trees with evaluate
// target health into static and client-dependent groups.
const selectionAllocBlock = `healthroute {` + checks + `
	region us-east-1 38.9 -77.0
	region eu-west-1 53.3 -6.3
	record simple.example.org. simple {
		A 192.0.2.1 192.0.2.2
	}
	record weighted.example.org. weighted {
		weight 10 A 192.0.2.1 check c1
		weight 20 A 192.0.2.2 check c2
		weight 0  A 192.0.2.3
	}
	record failover.example.org. failover {
		primary   A 192.0.2.1 check c1
		secondary A 192.0.2.2
	}
	record multi.example.org. multivalue {
		value A 192.0.2.1 check c1
		value A 192.0.2.2 check c2
		value A 192.0.2.3 check c3
		value A 192.0.2.4
	}
	record latency.example.org. latency {
		region us-east-1 A 192.0.2.1 check c1
		region eu-west-1 A 192.0.2.2 check c2
	}
	record geo.example.org. geolocation {
		country US A 192.0.2.1 check c1
		continent EU A 192.0.2.2
		default A 192.0.2.3
	}
	record prox.example.org. geoproximity {
		region us-east-1 A 192.0.2.1 check c1
		coordinates 0 1 bias 20 A 192.0.2.2 check c2
	}
	record ip.example.org. ip {
		cidr 198.51.100.0/24 A 198.51.100.1 check c2
		default A 192.0.2.3
	}
	record tree.example.org. failover {
		primary   alias geo.example.org.
		secondary alias pool.example.org.
	}
	record pool.example.org. weighted {
		weight 10 alias latency.example.org.
		weight 10 A 192.0.2.9 check c4
	}
	record cname.example.org. simple {
		CNAME weighted.example.org.
	}
	record chain.example.org. failover {
		primary   CNAME cname.example.org. check c3
		secondary CNAME tomulti.example.org.
	}
	record tomulti.example.org. weighted {
		weight 1 CNAME multi.example.org.
	}
}`

// selectionNames are selectionAllocBlock's names: a policy each, then the CNAME chases
// (to a weighted name; through two CNAMEs to it or, with c3 down, to the multivalue set).
var selectionNames = []string{"simple", "weighted", "failover", "multi", "latency", "geo", "prox", "ip", "tree", "pool",
	"cname", "chain", "tomulti"}

// resolveInto answers q as the handler does, with reply as the message that an answer
// built per query (a multivalue set's records, a CNAME chain) is built in: allocations
// counted around it are the Resolver's beyond the reply.
func resolveInto(r *routing.Resolver, q routing.Query, reply *routing.ReplyMsg) routing.Answer {
	ans := routing.Answer{Out: reply}
	r.ResolveInto(&q, &ans)
	return ans
}

// TestSelectionAllocatesNothing holds the claim that selection allocates nothing beyond
// the reply message: every policy's path through the Resolver, a multivalue answer and
// CNAME chases included, healthy, partly failed, and in its last resort, with and
// without a client location.
func TestSelectionAllocatesNothing(t *testing.T) {
	r, cfg := testResolver(t, selectionAllocBlock)
	r.Rand = nil // the production random source
	us := routing.ClientLocation{Country: "US", Continent: "NA", Lat: 40.7, Lon: -74, HasCoords: true}
	ie := routing.ClientLocation{Country: "IE", Continent: "EU", Lat: 53.3, Lon: -6.3, HasCoords: true}
	client := netip.MustParsePrefix("198.51.100.0/24")
	other := netip.MustParsePrefix("203.0.113.7/32")
	reply := routing.NewReplyMsg(16)
	for _, down := range [][]string{nil, {"c1"}, {"c3"}, {"c1", "c2", "c3", "c4"}} {
		r.Publish(snapshot(cfg, down...))
		for _, name := range selectionNames {
			for _, q := range []routing.Query{
				{Name: name + ".example.org.", Type: dns.TypeA, Client: client, Loc: us},
				{Name: name + ".example.org.", Type: dns.TypeA, Client: other, Loc: ie},
				{Name: name + ".example.org.", Type: dns.TypeA, Client: other},
				{Name: name + ".example.org.", Type: dns.TypeAAAA, Client: client, Loc: us},
			} {
				ans := resolveInto(r, q, reply)
				if len(ans.RRs) == 0 && q.Type == dns.TypeA {
					t.Fatalf("down %v: %s from %s: no answer", down, q.Name, q.Client)
				}
				if built := ans.Out != nil && len(ans.RRs) > 0 && &ans.RRs[0] == &reply.RRs[0]; (name == "multi" || name == "cname" || name == "tomulti") &&
					q.Type == dns.TypeA && !built {
					t.Errorf("down %v: %s: answer %v not built in the reply", down, q.Name, ans.RRs)
				}
				if n := testing.AllocsPerRun(50, func() { resolveInto(r, q, reply) }); n != 0 {
					t.Errorf("down %v: %s %s from %s (%+v): %v allocations per query beyond the reply, want 0",
						down, q.Name, dns.TypeToString[q.Type], q.Client, q.Loc, n)
				}
			}
		}
	}
}

// TestReplyHoldsAnswerBuiltPerQuery: through the handler, a multivalue answer and a
// CNAME chase (one and two steps, into the multivalue set) cost the same allocations as
// a single member's answer, and their replies carry the whole answer.
func TestReplyHoldsAnswerBuiltPerQuery(t *testing.T) {
	h := testHandler(t, selectionAllocBlock)
	h.resolver.Publish(snapshot(h.cfg, "c3")) // chain goes by tomulti to multi
	w := &test.ResponseWriter{RemoteIP: "203.0.113.7"}
	ctx := context.Background()
	allocs := func(name string) float64 {
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeA)
		rec := dnstest.NewRecorder(w)
		h.ServeDNS(ctx, rec, q)
		if rec.Msg == nil || rec.Msg.Rcode != dns.RcodeSuccess || len(rec.Msg.Answer) == 0 {
			t.Fatalf("%s: reply %v", name, rec.Msg)
		}
		if n := len(rec.Msg.Answer); name == "chain.example.org." && n != 5 { // chain, tomulti, and multi's three healthy values
			t.Errorf("%s: %d records in the answer, want 5: %v", name, n, rec.Msg.Answer)
		}
		return testing.AllocsPerRun(100, func() { h.ServeDNS(ctx, w, q) })
	}
	single := allocs("weighted.example.org.")
	for _, name := range []string{"multi.example.org.", "cname.example.org.", "tomulti.example.org.", "chain.example.org."} {
		if n := allocs(name); n != single {
			t.Errorf("%s: %v allocations per query, want %v as a single member's answer", name, n, single)
		}
	}
}
