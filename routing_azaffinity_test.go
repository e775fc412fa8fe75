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

// azChecks are the checks of azRecords: one per location of its members.
const azChecks = `
	check az1 tcp 127.0.0.1:1
	check zg tcp 127.0.0.1:2
	check reg tcp 127.0.0.1:3
	check part tcp 127.0.0.1:4
	check glob tcp 127.0.0.1:5
	check other tcp 127.0.0.1:6
`

// azRecords has a member for every location containing use1-az1, from most to least
// specific, and two for locations elsewhere.
const azRecords = `
	record svc.example.org. azaffinity {
		az use1-az1 A 192.0.2.1 check az1
		zone_group us-east-1-zg-1 A 192.0.2.2 check zg
		region us-east-1 A 192.0.2.3 check reg
		partition aws A 192.0.2.4 check part
		global A 192.0.2.5 check glob
		az use1-az2 A 192.0.2.6 check other
		region eu-west-1 A 192.0.2.7 check other
	}
`

// azDownSteps makes the members for use1-az1's locations unhealthy one by one, most
// specific first.
var azDownSteps = [][]string{nil, {"az1"}, {"az1", "zg"}, {"az1", "zg", "reg"}, {"az1", "zg", "reg", "part"},
	{"az1", "zg", "reg", "part", "glob"}}

// TestAZAffinityServerLocation covers docs/az-affinity.md#choose for a server placed
// at each location type and at none: the most specific healthy member containing the
// server's location answers; when all are unhealthy, the most specific one; an
// unknown location matches only global.
func TestAZAffinityServerLocation(t *testing.T) {
	tests := []struct {
		location string
		want     []string // by azDownSteps
	}{
		{"location az use1-az1", []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.1"}},
		{"location zone_group us-east-1-zg-1", []string{"192.0.2.2", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.2"}},
		{"location region us-east-1", []string{"192.0.2.3", "192.0.2.3", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.3"}},
		{"location partition aws", []string{"192.0.2.4", "192.0.2.4", "192.0.2.4", "192.0.2.4", "192.0.2.5", "192.0.2.4"}},
		{"", []string{"192.0.2.5", "192.0.2.5", "192.0.2.5", "192.0.2.5", "192.0.2.5", "192.0.2.5"}},
		{"location az use1-az2", []string{"192.0.2.6", "192.0.2.6", "192.0.2.6", "192.0.2.6", "192.0.2.6", "192.0.2.6"}},
		{"location az euw1-az3", []string{"192.0.2.7", "192.0.2.7", "192.0.2.7", "192.0.2.7", "192.0.2.7", "192.0.2.7"}},
		{"location partition aws-cn", []string{"192.0.2.5", "192.0.2.5", "192.0.2.5", "192.0.2.5", "192.0.2.5", "192.0.2.5"}},
	}
	for _, tc := range tests {
		name := tc.location
		if name == "" {
			name = "unknown location"
		}
		t.Run(name, func(t *testing.T) {
			r, cfg := testResolver(t, "healthroute {\n"+tc.location+"\n"+azChecks+azRecords+"}")
			for i, down := range azDownSteps {
				r.Publish(snapshot(cfg, down...))
				got, ans := ask(r, "svc.example.org.", "198.51.100.1/32", routing.ClientLocation{})
				if got != tc.want[i] || ans.Rcode != dns.RcodeSuccess || ans.Scope != 0 {
					t.Errorf("%v down: got %q rcode %s scope %d, want %q NOERROR scope 0", down, got, dns.RcodeToString[ans.Rcode], ans.Scope, tc.want[i])
				}
			}
		})
	}
}

// TestAZAffinityNoGlobal: a query whose location no member contains gets NODATA,
// never NXDOMAIN, as geolocation without a default.
func TestAZAffinityNoGlobal(t *testing.T) {
	r, cfg := testResolver(t, `healthroute {
		`+azChecks+`
		record svc.example.org. azaffinity {
			az use1-az1 A 192.0.2.1 check az1
		}
	}`)
	r.Publish(snapshot(cfg, "az1"))
	got, ans := ask(r, "svc.example.org.", "198.51.100.1/32", routing.ClientLocation{})
	if got != "" || ans.Rcode != dns.RcodeSuccess || len(ans.Ns) != 1 {
		t.Errorf("unknown location without global: got %q rcode %s, %d authority records; want NODATA with the SOA", got, dns.RcodeToString[ans.Rcode], len(ans.Ns))
	}
}

// azClientBlock places clients by prefix: use1-az2 and eu-west-1 by client_location,
// everyone else at the server's location, use1-az1.
const azClientBlock = `healthroute {
	location az use1-az1
	client_location az use1-az2 10.2.0.0/16
	client_location region eu-west-1 10.9.0.0/16,2001:db8:9::/48
	client_location zone_group us-east-1-zg-1 10.3.0.0/24
` + azChecks + azRecords + `}`

// TestAZAffinityClientLocation covers docs/az-affinity.md#client-location: a client's
// prefix (the ECS source prefix, else its address) places the query, and the ECS
// scope covers exactly the addresses placed alike.
func TestAZAffinityClientLocation(t *testing.T) {
	tests := []struct {
		name, client string
		down         []string
		want         string
		scope        uint8
	}{
		{"address in use1-az2's prefix", "10.2.3.4/32", nil, "192.0.2.6", 16},
		{"ECS /24 inside use1-az2's /16", "10.2.7.0/24", nil, "192.0.2.6", 16},
		{"use1-az2 unhealthy: its zone group", "10.2.7.0/24", []string{"other"}, "192.0.2.2", 16},
		{"use1-az2, zone group and region unhealthy: partition", "10.2.7.0/24", []string{"other", "zg", "reg"}, "192.0.2.4", 16},
		{"eu-west-1 client", "10.9.1.0/24", nil, "192.0.2.7", 16},
		{"eu-west-1 unhealthy: partition aws contains it", "10.9.1.0/24", []string{"other"}, "192.0.2.4", 16},
		{"eu-west-1 over IPv6", "2001:db8:9:1::/64", nil, "192.0.2.7", 48},
		{"zone group client skips the AZ member", "10.3.0.9/32", nil, "192.0.2.2", 24},
		{"unplaced address: the server's use1-az1", "192.0.2.77/32", nil, "192.0.2.1", 1},
		{"unplaced ECS /8 holds a /24 block: scope /24", "10.0.0.0/8", nil, "192.0.2.1", 24},
		{"unplaced, use1-az1 unhealthy: zone group", "192.0.2.77/32", []string{"az1"}, "192.0.2.2", 1},
		{"unplaced IPv6: server's location, apart from 2001:db8:9::/48 at bit 45", "2001:db8:1::/48", nil, "192.0.2.1", 45},
		{"every member of the location unhealthy: the most specific", "10.2.0.0/16", []string{"other", "zg", "reg", "part", "glob"}, "192.0.2.6", 16},
	}
	r, cfg := testResolver(t, azClientBlock)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.Publish(snapshot(cfg, tc.down...))
			got, ans := ask(r, "svc.example.org.", tc.client, routing.ClientLocation{})
			if got != tc.want || ans.Scope != tc.scope {
				t.Errorf("got %q scope /%d, want %q scope /%d", got, ans.Scope, tc.want, tc.scope)
			}
		})
	}
}

// TestAZAffinityExplainMatchesDNS: explain answers as DNS does for random health and
// clients, names the query's location and where it came from, and says why each
// more specific member was passed over.
func TestAZAffinityExplainMatchesDNS(t *testing.T) {
	r, cfg := testResolver(t, azClientBlock)
	rng := rand.New(rand.NewPCG(3, 5))
	all := []string{"az1", "zg", "reg", "part", "glob", "other"}
	clients := []string{"10.2.0.0/24", "10.9.4.0/24", "10.3.0.1/32", "192.0.2.1/32", "2001:db8:9::/56", "10.0.0.0/8"}
	for i := range 500 {
		var down []string
		for _, c := range all {
			if rng.IntN(2) == 0 {
				down = append(down, c)
			}
		}
		r.Publish(snapshot(cfg, down...))
		q := routing.Query{Name: "svc.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix(clients[rng.IntN(len(clients))])}
		dnsAns := resolveAnswer(r, q)
		expAns, tr := r.Explain(q)
		if !slices.Equal(rrValues(dnsAns.RRs), rrValues(expAns.RRs)) || dnsAns.Scope != expAns.Scope {
			t.Fatalf("case %d (%s, %v down): DNS %v /%d, explain %v /%d", i, q.Client, down, dnsAns.RRs, dnsAns.Scope, expAns.RRs, expAns.Scope)
		}
		step := tr.Steps[0]
		if step.Scope != dnsAns.Scope || !strings.Contains(step.Location, "(") {
			t.Fatalf("case %d: step scope /%d location %q, want /%d and its source", i, step.Scope, step.Location, dnsAns.Scope)
		}
		var chosen int
		for _, m := range step.Members {
			if m.Chosen {
				chosen++
				if !slices.Contains(rrValues(dnsAns.RRs), strings.TrimPrefix(m.Target, "A ")) {
					t.Fatalf("case %d: explain chose %s, DNS answered %v", i, m.Target, dnsAns.RRs)
				}
			}
		}
		if chosen != 1 {
			t.Fatalf("case %d: %d members chosen: %+v", i, chosen, step.Members)
		}
	}
}

// TestAZAffinityExplainReasons: a fall back from use1-az1 to its region is explained
// member by member.
func TestAZAffinityExplainReasons(t *testing.T) {
	r, cfg := testResolver(t, azClientBlock)
	r.Publish(snapshot(cfg, "az1", "zg"))
	_, tr := r.Explain(routing.Query{Name: "svc.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("192.0.2.1/32")})
	step := tr.Steps[0]
	if want := "az use1-az1 (the server's location line)"; step.Location != want {
		t.Errorf("location %q, want %q", step.Location, want)
	}
	want := map[string]string{
		"az use1-az1":               "check az1 is unhealthy",
		"zone_group us-east-1-zg-1": "check zg is unhealthy",
		"region us-east-1":          "chosen: region us-east-1 is the most specific healthy location that contains the query's",
		"partition aws":             "healthy, not chosen: a more specific location that contains the query's is healthy",
		"global":                    "healthy, not chosen: a more specific location that contains the query's is healthy",
		"az use1-az2":               "does not apply: the query's location is not in az use1-az2",
		"region eu-west-1":          "does not apply: the query's location is not in region eu-west-1",
	}
	for _, m := range step.Members {
		if m.Reason != want[m.Key] {
			t.Errorf("%s: reason %q, want %q", m.Key, m.Reason, want[m.Key])
		}
	}
	_, tr = r.Explain(routing.Query{Name: "svc.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("10.9.0.0/24")})
	if got := tr.Steps[0].Location; got != "region eu-west-1 (client_location region eu-west-1: the client 10.9.0.0/24 is in its prefixes)" {
		t.Errorf("client location explained as %q", got)
	}
}

// TestAZAffinityETH: an alias evaluating the target health of an azaffinity set sees
// only the members that apply to the query's location.
func TestAZAffinityETH(t *testing.T) {
	block := `healthroute {
		location region us-east-1
		client_location az euw1-az1 10.9.0.0/16
		` + azChecks + `
		record svc.example.org. azaffinity {
			region us-east-1 A 192.0.2.3 check reg
			region eu-west-1 A 192.0.2.7 check other
		}
		record top.example.org. failover {
			primary alias svc.example.org.
			secondary A 192.0.2.99
		}
	}`
	r, cfg := testResolver(t, block)
	r.Publish(snapshot(cfg, "reg"))
	if got, ans := ask(r, "top.example.org.", "192.0.2.1/32", routing.ClientLocation{}); got != "192.0.2.99" || ans.Scope != 1 {
		t.Errorf("us-east-1 member down, server in us-east-1: got %q /%d, want the secondary /1", got, ans.Scope)
	}
	if got, _ := ask(r, "top.example.org.", "10.9.1.1/32", routing.ClientLocation{}); got != "192.0.2.7" {
		t.Errorf("eu-west-1 client: got %q, want its region's member", got)
	}
}

// TestAZLocationNames covers docs/az-affinity.md#names: what the names say about the
// locations containing them, and what az_location lines state instead.
func TestAZLocationNames(t *testing.T) {
	tests := []struct {
		level routing.AZLevel
		id    string
		want  routing.AZChain
	}{
		{routing.AZZone, "use1-az1", routing.AZChain{"use1-az1", "us-east-1-zg-1", "us-east-1", "aws"}},
		{routing.AZZone, "apne1-az4", routing.AZChain{"apne1-az4", "ap-northeast-1-zg-1", "ap-northeast-1", "aws"}},
		{routing.AZZone, "usgw1-az2", routing.AZChain{"usgw1-az2", "us-gov-west-1-zg-1", "us-gov-west-1", "aws-us-gov"}},
		{routing.AZZone, "cnnw1-az1", routing.AZChain{"cnnw1-az1", "cn-northwest-1-zg-1", "cn-northwest-1", "aws-cn"}},
		{routing.AZZone, "euc1-az3", routing.AZChain{"euc1-az3", "eu-central-1-zg-1", "eu-central-1", "aws"}},
		{routing.AZZone, "apse2-az1", routing.AZChain{"apse2-az1", "ap-southeast-2-zg-1", "ap-southeast-2", "aws"}},
		{routing.AZZoneGroup, "us-west-2-zg-1", routing.AZChain{"", "us-west-2-zg-1", "us-west-2", "aws"}},
		{routing.AZRegion, "us-isob-east-1", routing.AZChain{"", "", "us-isob-east-1", "aws-iso-b"}},
		{routing.AZRegion, "eusc-de-east-1", routing.AZChain{"", "", "eusc-de-east-1", "aws-eusc"}},
		{routing.AZPartition, "aws-iso", routing.AZChain{"", "", "", "aws-iso"}},
		{routing.AZZone, "lab-az9", routing.AZChain{"lab-az9", "lab-zg", "lab-1", "aws-lab"}},
		{routing.AZZoneGroup, "lab-zg", routing.AZChain{"", "lab-zg", "lab-1", "aws-lab"}},
	}
	az := &routing.AZConfig{Declared: map[string]routing.AZChain{"lab-az9": {"lab-az9", "lab-zg", "lab-1", "aws-lab"}}}
	for _, tc := range tests {
		got, err := az.Chain(tc.level, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("%s %s: got %v, %v; want %v", tc.level, tc.id, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		level routing.AZLevel
		id    string
	}{{routing.AZZone, "us-east-1a"}, {routing.AZZone, "xx1-az1"}, {routing.AZZone, "use1-bos1-az1"}, {routing.AZZoneGroup, "us-east-1"}, {routing.AZRegion, "east"}, {routing.AZPartition, "amazon"}} {
		if got, err := az.Chain(bad.level, bad.id); err == nil {
			t.Errorf("%s %s: accepted as %v", bad.level, bad.id, got)
		}
	}
}

// TestAZAffinityAllocatesNothing holds docs/routing.md's rule for the new policy:
// choosing in an azaffinity set, directly and through evaluate target health, by the
// server's location and by client prefix, allocates nothing.
func TestAZAffinityAllocatesNothing(t *testing.T) {
	r, cfg := testResolver(t, azClientBlock[:len(azClientBlock)-1]+`
	record top.example.org. failover {
		primary alias svc.example.org.
		secondary A 192.0.2.99
	}
}`)
	r.Rand = nil
	for _, down := range azDownSteps {
		r.Publish(snapshot(cfg, down...))
		for _, name := range []string{"svc.example.org.", "top.example.org."} {
			for _, c := range []string{"10.2.0.0/24", "192.0.2.1/32", "2001:db8:9::/56"} {
				q := routing.Query{Name: name, Type: dns.TypeA, Client: netip.MustParsePrefix(c)}
				if n := testing.AllocsPerRun(50, func() { resolveAnswer(r, q) }); n != 0 {
					t.Errorf("%v down: %s from %s: %v allocations per query, want 0", down, name, c, n)
				}
			}
		}
	}
}

// TestAZLocationLinesDisagree: two az_location lines that place one zone group in two
// regions are refused at the later line.
func TestAZLocationLinesDisagree(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{{"zone group in two regions",
		"healthroute {\naz_location lab-az1 lab-zg lab-1 aws-lab\naz_location lab-az2 lab-zg lab-2 aws-lab\n}", 3,
		"zone_group lab-zg is placed in lab-2 aws-lab here and in lab-1 aws-lab by the line of lab-az1 (line 2)"}})
}

// BenchmarkAZAffinity resolves an azaffinity set for a client placed by prefix and for
// one at the server's location, with the AZ's member down (one fall back).
func BenchmarkAZAffinity(b *testing.B) {
	r, cfg := testResolver(b, azClientBlock)
	r.Publish(snapshot(cfg, "az1", "other"))
	for _, c := range []string{"10.2.0.0/24", "192.0.2.1/32"} {
		q := routing.Query{Name: "svc.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix(c)}
		b.Run(c, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resolveAnswer(r, q)
			}
		})
	}
}
