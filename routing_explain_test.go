package healthroute

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

const explainBlock = `healthroute {` + checks + `
	check c5 tcp 127.0.0.1:5
	check c6 tcp 127.0.0.1:6
	region us-east-1 38.9 -77.0
	region ap-southeast-2 -33.9 151.2
	record www.example.org. latency {
		region us-east-1      alias use1.example.org.
		region ap-southeast-2 alias apse2.example.org.
	}
	record use1.example.org. weighted {
		weight 10 A 192.0.2.1 check c1
		weight 10 A 192.0.2.2 check c2
		weight 0  A 192.0.2.3 check c5
	}
	record apse2.example.org. weighted {
		weight 10 A 198.51.100.1 check c3
		weight 20 A 198.51.100.2 check c4
	}
	record geo.example.org. geolocation {
		country US alias www.example.org.
		continent EU A 203.0.113.1 check c6
		default A 203.0.113.9
	}
	record net.example.org. ip {
		cidr 192.0.2.0/24 alias geo.example.org.
		default alias www.example.org.
	}
}`

// TestExplainBackedOutBranch: a latency -> weighted tree whose nearest region failed;
// the trace names the branch that was backed out of and why.
func TestExplainBackedOutBranch(t *testing.T) {
	r, cfg := testResolver(t, explainBlock)
	r.Publish(snapshot(cfg, "c1", "c2", "c5"))
	near := routing.Query{Name: "www.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("192.0.2.0/24"),
		Loc: routing.ClientLocation{Lat: 40.7, Lon: -74, HasCoords: true}} // New York: us-east-1 is nearest
	ans, tr := r.Explain(near)
	if got := rrValues(ans.RRs); len(got) != 1 || !strings.HasPrefix(got[0], "198.51.100.") {
		t.Fatalf("answer %v, want one of apse2's", got)
	}
	if len(tr.Steps) != 2 || tr.Steps[0].Record != "www.example.org." || tr.Steps[1].Record != "apse2.example.org." {
		t.Fatalf("steps %+v, want www then apse2", tr.Steps)
	}
	use1 := tr.Steps[0].Members[0]
	if use1.Healthy || use1.Chosen || !strings.Contains(use1.Reason, "use1.example.org. has no healthy answer") {
		t.Errorf("use1 member: %+v, want it skipped because its branch has no healthy answer", use1)
	}
	if apse2 := tr.Steps[0].Members[1]; !apse2.Chosen || !apse2.Healthy {
		t.Errorf("apse2 member: %+v, want chosen", apse2)
	}
	if tr.Steps[0].LastResort || !tr.Steps[0].ClientDependent {
		t.Errorf("step 0: %+v", tr.Steps[0])
	}

	// Everything down: the last resort fires at both levels and says so.
	r.Publish(snapshot(cfg, "c1", "c2", "c3", "c4", "c5"))
	_, tr = r.Explain(near)
	if len(tr.Steps) != 2 || !tr.Steps[0].LastResort || !tr.Steps[1].LastResort || tr.Steps[1].Record != "use1.example.org." {
		t.Fatalf("all down: steps %+v, want last resort into use1", tr.Steps)
	}
	if !strings.Contains(tr.Steps[0].Members[0].Reason, "last resort") {
		t.Errorf("chosen member's reason %q does not name the last resort", tr.Steps[0].Members[0].Reason)
	}
}

// TestExplainMatchesDNS is a property test: for random clients and health states,
// Explain's answer equals the DNS path's answer with the same random source.
func TestExplainMatchesDNS(t *testing.T) {
	r, cfg := testResolver(t, explainBlock)
	rng := rand.New(rand.NewPCG(7, 11))
	names := []string{"www.example.org.", "geo.example.org.", "net.example.org.", "use1.example.org."}
	countries := []string{"", "US", "DE", "JP", "FR"}
	all := []string{"c1", "c2", "c3", "c4", "c5", "c6"}
	for i := range 2000 {
		var down []string
		for _, c := range all {
			if rng.IntN(2) == 0 {
				down = append(down, c)
			}
		}
		r.Publish(snapshot(cfg, down...))
		a := netip.AddrFrom4([4]byte{byte(192 + rng.IntN(3)), 0, byte(rng.IntN(4)), byte(rng.IntN(256))})
		q := routing.Query{Name: names[rng.IntN(len(names))], Type: dns.TypeA, Client: netip.PrefixFrom(a, 24+rng.IntN(9)).Masked(),
			Loc: routing.ClientLocation{Country: countries[rng.IntN(len(countries))], Lat: rng.Float64()*180 - 90, Lon: rng.Float64()*360 - 180, HasCoords: rng.IntN(2) == 0}}
		seed := rng.Uint64()
		r.Rand = rand.New(rand.NewPCG(seed, 1)).Uint64N
		dnsAns := resolveAnswer(r, q)
		r.Rand = rand.New(rand.NewPCG(seed, 1)).Uint64N
		expAns, tr := r.Explain(q)
		if !slices.Equal(rrValues(dnsAns.RRs), rrValues(expAns.RRs)) || dnsAns.Rcode != expAns.Rcode || dnsAns.Scope != expAns.Scope {
			t.Fatalf("case %d (%s from %s, %s down): DNS %v, explain %v\n%+v", i, q.Name, q.Client, down, dnsAns.RRs, expAns.RRs, tr)
		}
		chosen := 0
		for _, m := range tr.Steps[len(tr.Steps)-1].Members {
			if m.Chosen {
				chosen++
			}
		}
		if len(expAns.RRs) > 0 && chosen != 1 {
			t.Fatalf("case %d: last step chose %d members, want 1: %+v", i, chosen, tr.Steps)
		}
	}
}
