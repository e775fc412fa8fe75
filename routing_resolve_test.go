package healthroute

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// TestScopeTrie: the scope is the shortest prefix of the client within which every
// address finds the same block, longer than the source when a block lies inside it.
func TestScopeTrie(t *testing.T) {
	var x routing.PrefixIndex[int32]
	for i, b := range []string{"192.0.2.0/24", "198.51.0.0/16", "198.51.100.128/25", "10.0.0.0/8", "2001:db8::/32"} {
		x.Add(netip.MustParsePrefix(b), int32(i))
	}
	tests := []struct {
		client string
		want   uint8
	}{
		{"192.0.0.0/16", 24},    // the case: a /24 inside the /16 source
		{"192.0.2.0/24", 24},    // exactly the block
		{"192.0.2.7/32", 24},    // inside the block, nothing longer: the block's length
		{"198.51.7.0/24", 18},   // in the /16; the /25 parts from it at bit 17
		{"198.51.100.0/24", 25}, // the /25 lies inside the client's /24
		{"198.51.100.0/25", 25}, // the /25's sibling
		{"203.0.113.0/24", 5},   // 203 parts from 192 and 198 at bit 4: 200.0.0.0/5 holds no block
		{"10.1.2.3/32", 8},      // in the /8
		{"2001:db8:1::/48", 32}, // v6 block
		{"2001:db9::/32", 32},   // parts from 2001:db8:: at bit 31
		{"2a00::/16", 5},        // 2a00 and 2001 share four bits
		{"0.0.0.0/0", 25},       // a /0 client: every block lies inside
		{"192.0.2.0/23", 24},    // shorter than the block: the block lies inside
	}
	for _, tc := range tests {
		if got := x.Scope(netip.MustParsePrefix(tc.client)); got != tc.want {
			t.Errorf("scope(%s) = %d, want %d", tc.client, got, tc.want)
		}
	}
	var empty routing.PrefixIndex[int32]
	if got := empty.Scope(netip.MustParsePrefix("192.0.2.0/24")); got != 0 {
		t.Errorf("no blocks: scope %d, want 0", got)
	}
}

// TestScopeMeansSameAnswer checks the scope's promise against the lookup itself:
// every address inside client/scope matches the same block as the client.
func TestScopeMeansSameAnswer(t *testing.T) {
	var x routing.PrefixIndex[int32]
	blocks := []string{"192.0.2.0/24", "192.0.2.128/26", "192.0.0.0/16", "198.51.100.0/24", "192.0.3.0/24"}
	for i, b := range blocks {
		x.Add(netip.MustParsePrefix(b), int32(i))
	}
	for _, c := range []string{"192.0.2.0/24", "192.0.2.64/26", "192.0.9.0/24", "192.0.0.0/16", "192.1.0.0/16", "198.51.100.9/32"} {
		client := netip.MustParsePrefix(c)
		s := x.Scope(client)
		want, wantOK := x.Lookup(client)
		if int(s) > client.Bits() {
			continue // the answer holds for this source prefix only
		}
		base := netip.PrefixFrom(client.Addr(), int(s)).Masked()
		// Walk addresses of the scope prefix, /24 steps (bounded: at most 256 tries).
		a := base.Addr()
		for range 256 {
			if !base.Contains(a) {
				break
			}
			probe := netip.PrefixFrom(a, client.Bits())
			if got, ok := x.Lookup(probe); ok != wantOK || got != want {
				t.Errorf("client %s, scope /%d: %s gets block %d (%t), client gets %d (%t)", c, s, probe, got, ok, want, wantOK)
				break
			}
			b := a.As4()
			b[2]++
			if b[2] == 0 {
				b[1]++
			}
			a = netip.AddrFrom4(b)
		}
	}
}

// serveRec runs one query through h and reports whether the next plugin ran.
func serveRec(t *testing.T, h *HealthRoute, q *dns.Msg) (*dns.Msg, int, bool) {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	rcode, _ := h.ServeDNS(context.Background(), rec, q)
	return rec.Msg, rcode, rec.Msg == nil && rcode == dns.RcodeServerFailure
}

func question(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

// TestOverlay: with fallthrough, only the names and types of the block's records
// (and the CNAME rule at its names) are answered; the rest of the zone, the apex
// included, goes to the next plugin.
func TestOverlay(t *testing.T) {
	h := testHandler(t, `healthroute {
		fallthrough
		record www.example.org. failover {
			primary A 192.0.2.1
			secondary A 192.0.2.2
		}
		record a.b.example.org. simple {
			AAAA 2001:db8::1
		}
		record alias.example.org. simple {
			CNAME www.example.org.
		}
		record geo.example.org. geolocation {
			country DE A 192.0.2.3
		}
	}`)
	h.Next = test.NextHandler(dns.RcodeServerFailure, nil) // a marker: "the next plugin ran"
	tests := []struct {
		name     string
		qtype    uint16
		wantNext bool
	}{
		{"example.org.", dns.TypeSOA, true},
		{"example.org.", dns.TypeNS, true},
		{"example.org.", dns.TypeMX, true},
		{"example.org.", dns.TypeA, true},
		{"www.example.org.", dns.TypeA, false},
		{"www.example.org.", dns.TypeTXT, true},
		{"www.example.org.", dns.TypeAAAA, true},
		{"b.example.org.", dns.TypeA, true}, // an empty non-terminal
		{"a.b.example.org.", dns.TypeAAAA, false},
		{"a.b.example.org.", dns.TypeA, true},
		{"nope.example.org.", dns.TypeA, true},
		{"alias.example.org.", dns.TypeTXT, false}, // the CNAME rule
		{"alias.example.org.", dns.TypeCNAME, false},
		{"geo.example.org.", dns.TypeA, false}, // defined, no record for this client: its own NODATA
	}
	for _, tc := range tests {
		m, _, ran := serveRec(t, h, question(tc.name, tc.qtype))
		if ran != tc.wantNext {
			t.Errorf("%s %s: next plugin ran = %t, want %t (answer %v)", tc.name, dns.TypeToString[tc.qtype], ran, tc.wantNext, m)
		}
	}
}

// TestStandalone: without fallthrough the block is the whole zone, with the soa
// and ns properties' values and RFC 2308 negative TTLs.
func TestStandalone(t *testing.T) {
	h := testHandler(t, `healthroute {
		ttl 300
		soa ns1.example.org. admin.example.org. 2024010101 3600 600 604800 60
		ns ns1.example.org. ns.example.net.
		record ns1.example.org. simple {
			A 192.0.2.53
			AAAA 2001:db8::53
		}
		record www.example.org. simple {
			A 192.0.2.1
		}
	}`)
	soaRR, _ := dns.NewRR("example.org. 300 IN SOA ns1.example.org. admin.example.org. 2024010101 3600 600 604800 60")
	m, _, _ := serveRec(t, h, question("example.org.", dns.TypeSOA))
	if len(m.Answer) != 1 || !dns.IsDuplicate(m.Answer[0], soaRR) {
		t.Errorf("apex SOA %v, want %s", m.Answer, soaRR)
	}
	m, _, _ = serveRec(t, h, question("example.org.", dns.TypeNS))
	if got := rrValues(m.Answer); len(got) != 2 || !strings.Contains(got[0], "ns.example.net.") || !strings.Contains(got[1], "ns1.example.org.") {
		t.Errorf("apex NS %v, want ns1.example.org. and ns.example.net.", got)
	}
	if got := rrValues(m.Extra); len(got) != 2 || got[0] != "192.0.2.53" || got[1] != "2001:db8::53" {
		t.Errorf("NS additional %v, want the in-zone server's A and AAAA", got)
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
	}{
		{"www.example.org.", dns.TypeAAAA, dns.RcodeSuccess},
		{"www.example.org.", dns.TypeTXT, dns.RcodeSuccess},
		{"example.org.", dns.TypeMX, dns.RcodeSuccess},
		{"nope.example.org.", dns.TypeA, dns.RcodeNameError},
	} {
		m, _, _ := serveRec(t, h, question(tc.name, tc.qtype))
		if m.Rcode != tc.rcode || len(m.Answer) != 0 || len(m.Ns) != 1 {
			t.Fatalf("%s %s: %v, want %s with the SOA", tc.name, dns.TypeToString[tc.qtype], m, dns.RcodeToString[tc.rcode])
		}
		if s, ok := m.Ns[0].(*dns.SOA); !ok || s.Hdr.Ttl != 60 || s.Serial != 2024010101 {
			t.Errorf("%s %s: authority %v, want the SOA with TTL min(300, 60) = 60", tc.name, dns.TypeToString[tc.qtype], m.Ns[0])
		}
	}
}

// TestSOADefaults: MNAME is the first ns, else the zone; the serial is the time the
// configuration was read, so a later configuration has a larger one.
func TestSOADefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustParse(t, "healthroute {\nttl 40\n}")
		time.Sleep(10 * time.Second) // fake time: the next configuration is read later
		b := mustParse(t, "healthroute {\nttl 40\nns ns.example.net.\n}")
		sa := routing.SOA("example.org.", a.TTL, &a.SOA, a.NS).(*dns.SOA)
		sb := routing.SOA("example.org.", b.TTL, &b.SOA, b.NS).(*dns.SOA)
		if sa.Ns != "example.org." || sa.Mbox != "hostmaster.example.org." || sa.Minttl != 40 {
			t.Errorf("defaults %v, want MNAME the zone, RNAME hostmaster, MINIMUM the ttl", sa)
		}
		if sb.Ns != "ns.example.net." {
			t.Errorf("MNAME %s, want the first ns", sb.Ns)
		}
		if sb.Serial != sa.Serial+10 || sa.Serial != uint32(time.Now().Add(-10*time.Second).Unix()) {
			t.Errorf("serials %d then %d, want the load times, 10 s apart", sa.Serial, sb.Serial)
		}
	})
}

const chaseBlock = `healthroute {
	ttl 30
	check c1 tcp 127.0.0.1:1
	record one.example.org. simple {
		CNAME w.example.org.
	}
	record two.example.org. weighted {
		weight 1 CNAME one.example.org.
	}
	record three.example.org. failover {
		primary CNAME two.example.org. check c1
		secondary CNAME net.example.org.
	}
	record w.example.org. weighted {
		weight 1 A 192.0.2.1
	}
	record net.example.org. ip {
		cidr 192.0.2.0/24 CNAME w.example.org.
		default CNAME v.example.org.
	}
	record v.example.org. simple {
		A 198.51.100.1
	}
	record loop1.example.org. simple {
		CNAME loop2.example.org.
	}
	record loop2.example.org. simple {
		CNAME loop1.example.org.
	}
	record self.example.org. simple {
		CNAME self.example.org.
	}
	record gone.example.org. simple {
		CNAME nope.example.org.
	}
	record out.example.org. simple {
		CNAME www.example.net.
	}
	record *.wild.example.org. simple {
		CNAME w.example.org.
	}
	record c0.example.org. simple {
		CNAME c1.example.org.
	}
	record c1.example.org. simple {
		CNAME c2.example.org.
	}
	record c2.example.org. simple {
		CNAME c3.example.org.
	}
	record c3.example.org. simple {
		CNAME c4.example.org.
	}
	record c4.example.org. simple {
		CNAME c5.example.org.
	}
	record c5.example.org. simple {
		CNAME c6.example.org.
	}
	record c6.example.org. simple {
		CNAME c7.example.org.
	}
	record c7.example.org. simple {
		CNAME c8.example.org.
	}
	record c8.example.org. simple {
		CNAME c9.example.org.
	}
	record c9.example.org. simple {
		CNAME w.example.org.
	}
}`

// chain renders an answer section as owner>target steps.
func chain(rrs []dns.RR) string {
	var parts []string
	for _, rr := range rrs {
		switch v := rr.(type) {
		case *dns.CNAME:
			parts = append(parts, strings.TrimSuffix(v.Hdr.Name, ".example.org."))
		case *dns.A:
			parts = append(parts, v.A.String())
		}
	}
	return strings.Join(parts, " ")
}

// TestCNAMEChase: a CNAME to the block's own names is followed, each target by its
// own policy for the same client, as CoreDNS's file plugin does.
func TestCNAMEChase(t *testing.T) {
	r, cfg := testResolver(t, chaseBlock)
	r.Publish(snapshot(cfg, "c1")) // three's primary is down: its secondary, to net
	tests := []struct {
		name, client string
		qtype        uint16
		want         string
		rcode        int
		scope        uint8
	}{
		{"one.example.org.", "203.0.113.1/32", dns.TypeA, "one 192.0.2.1", dns.RcodeSuccess, 0},
		{"two.example.org.", "203.0.113.1/32", dns.TypeA, "two one 192.0.2.1", dns.RcodeSuccess, 0},
		{"three.example.org.", "192.0.2.0/24", dns.TypeA, "three net 192.0.2.1", dns.RcodeSuccess, 24},
		{"three.example.org.", "198.51.0.0/16", dns.TypeA, "three net 198.51.100.1", dns.RcodeSuccess, 6},
		{"one.example.org.", "203.0.113.1/32", dns.TypeCNAME, "one", dns.RcodeSuccess, 0}, // asked for the CNAME: not followed
		{"one.example.org.", "203.0.113.1/32", dns.TypeAAAA, "one", dns.RcodeSuccess, 0},  // the target has no AAAA: NODATA after the CNAME
		{"gone.example.org.", "203.0.113.1/32", dns.TypeA, "gone", dns.RcodeNameError, 0},
		{"out.example.org.", "203.0.113.1/32", dns.TypeA, "out", dns.RcodeSuccess, 0},
		{"x.wild.example.org.", "203.0.113.1/32", dns.TypeA, "x.wild 192.0.2.1", dns.RcodeSuccess, 0},
		{"loop1.example.org.", "203.0.113.1/32", dns.TypeA, "loop1 loop2", dns.RcodeSuccess, 0},
		{"self.example.org.", "203.0.113.1/32", dns.TypeA, "self", dns.RcodeSuccess, 0},
		// c0 -> c1 ... c9 -> w: ten CNAMEs; the chase stops after 8 more, as file does.
		{"c0.example.org.", "203.0.113.1/32", dns.TypeA, "c0 c1 c2 c3 c4 c5 c6 c7 c8", dns.RcodeSuccess, 0},
		{"c2.example.org.", "203.0.113.1/32", dns.TypeA, "c2 c3 c4 c5 c6 c7 c8 c9 192.0.2.1", dns.RcodeSuccess, 0},
	}
	for _, tc := range tests {
		ans := resolveAnswer(r, routing.Query{Name: tc.name, Type: tc.qtype, Client: netip.MustParsePrefix(tc.client)})
		if got := chain(ans.RRs); got != tc.want || ans.Rcode != tc.rcode || ans.Scope != tc.scope {
			t.Errorf("%s %s from %s: %q %s scope %d, want %q %s scope %d", tc.name, dns.TypeToString[tc.qtype], tc.client,
				got, dns.RcodeToString[ans.Rcode], ans.Scope, tc.want, dns.RcodeToString[tc.rcode], tc.scope)
		}
		if negative := ans.Rcode == dns.RcodeNameError || tc.qtype == dns.TypeAAAA; negative && len(ans.Ns) != 1 {
			t.Errorf("%s %s: authority %v, want the SOA", tc.name, dns.TypeToString[tc.qtype], ans.Ns)
		}
	}
}

// TestCNAMEChaseOverlay: with fallthrough, a target the block does not define ends
// the chain; the client's Resolver asks the next plugin for it.
func TestCNAMEChaseOverlay(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		fallthrough
		record a.example.org. simple {
			CNAME b.example.org.
		}
		record b.example.org. simple {
			CNAME zonefile.example.org.
		}
	}`)
	ans := resolveAnswer(r, routing.Query{Name: "a.example.org.", Type: dns.TypeA, Client: testClient})
	if got := chain(ans.RRs); got != "a b" || ans.Rcode != dns.RcodeSuccess || len(ans.Ns) != 0 || ans.Pass {
		t.Errorf("answer %q %s ns %v pass %t, want a b, NOERROR, no authority", got, dns.RcodeToString[ans.Rcode], ans.Ns, ans.Pass)
	}
}

// TestOpcodes: only queries are answered; other opcodes and zone transfers go to
// the next plugin, and without one get what stock CoreDNS gives.
func TestOpcodes(t *testing.T) {
	h := testHandler(t, handlerBlock)
	notify := question("example.org.", dns.TypeSOA)
	notify.Opcode = dns.OpcodeNotify
	axfr := question("example.org.", dns.TypeAXFR)
	ixfr := question("example.org.", dns.TypeIXFR)
	h.Next = test.NextHandler(dns.RcodeServerFailure, nil)
	for _, q := range []*dns.Msg{notify, axfr, ixfr} {
		if _, _, ran := serveRec(t, h, q); !ran {
			t.Errorf("%s: next plugin did not run", q.Question[0].String())
		}
	}
	h.Next = nil
	for q, want := range map[*dns.Msg]int{notify: dns.RcodeNotImplemented, axfr: dns.RcodeRefused, ixfr: dns.RcodeRefused} {
		if m, rcode, _ := serveRec(t, h, q); m != nil || rcode != want {
			t.Errorf("%s without a next plugin: %v rcode %s, want %s returned for the server to write", q.Question[0].String(), m, dns.RcodeToString[rcode], dns.RcodeToString[want])
		}
	}
}

// TestECSScopeOverDNS: the scope echoed is the answer's, in the option's family.
func TestECSScopeOverDNS(t *testing.T) {
	h := testHandler(t, `healthroute {
		record net.example.org. ip {
			cidr 192.0.2.0/24 A 192.0.2.10
			default A 192.0.2.12
		}
		record lat.example.org. latency {
			region a A 192.0.2.1
			region b A 192.0.2.2
		}
		record geo.example.org. geolocation {
			default A 192.0.2.3
		}
		record w.example.org. weighted {
			weight 1 A 192.0.2.4
		}
	}`)
	tests := []struct {
		q    *dns.Msg
		want uint8
	}{
		{ecsQuery("net.example.org.", 1, net.ParseIP("192.0.0.0").To4(), 16, 0), 24},
		{ecsQuery("net.example.org.", 2, net.ParseIP("::ffff:192.0.0.0"), 112, 0), 120}, // 4-in-6: 96 + 24
		{ecsQuery("lat.example.org.", 1, net.ParseIP("192.0.2.0").To4(), 24, 0), 0},     // no table, no coordinates: listed order
		{ecsQuery("geo.example.org.", 1, net.ParseIP("192.0.2.0").To4(), 24, 0), 0},     // only a default
		{ecsQuery("w.example.org.", 1, net.ParseIP("192.0.2.0").To4(), 24, 0), 0},
	}
	for _, tc := range tests {
		m, _, _ := serveRec(t, h, tc.q)
		var got *dns.EDNS0_SUBNET
		for _, o := range m.IsEdns0().Option {
			got, _ = o.(*dns.EDNS0_SUBNET)
		}
		if got == nil || got.SourceScope != tc.want {
			t.Errorf("%s: echoed %v, want scope %d", tc.q.Question[0].Name, got, tc.want)
		}
	}
}

// TestExplainScope: explain gives each step's scope and why.
func TestExplainScope(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		record net.example.org. ip {
			cidr 192.0.2.0/24 A 192.0.2.10
			default A 192.0.2.12
		}
	}`)
	ans, tr := r.Explain(routing.Query{Name: "net.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("192.0.0.0/16")})
	if ans.Scope != 24 || len(tr.Steps) != 1 || tr.Steps[0].Scope != 24 || !strings.Contains(tr.Steps[0].ScopeReason, "inside the client's /16") {
		t.Errorf("scope %d, steps %+v; want 24, explained by a block inside the /16", ans.Scope, tr.Steps)
	}
}

// TestPlainAnswerAllocs: the overlay and the CNAME chase cost a plain answer nothing.
func TestPlainAnswerAllocs(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		fallthrough
		record w.example.org. weighted {
			weight 1 A 192.0.2.1
			weight 1 A 192.0.2.2
		}
		record net.example.org. ip {
			cidr 192.0.2.0/24 alias w.example.org.
			default A 192.0.2.12
		}
	}`)
	for _, name := range []string{"w.example.org.", "net.example.org."} {
		q := routing.Query{Name: name, Type: dns.TypeA, Client: netip.MustParsePrefix("192.0.0.0/16")}
		if n := testing.AllocsPerRun(100, func() { resolveAnswer(r, q) }); n != 0 {
			t.Errorf("%s: %.0f allocations per answer, want 0", name, n)
		}
	}
}

// BenchmarkResolveCNAMEChase measures a two-step chase through different policies,
// built in a reply as the handler's (its allocations are those beyond the reply).
func BenchmarkResolveCNAMEChase(b *testing.B) {
	r, _ := testResolver(b, chaseBlock)
	q := routing.Query{Name: "two.example.org.", Type: dns.TypeA, Client: testClient}
	reply := routing.NewReplyMsg(16)
	b.ReportAllocs()
	for b.Loop() {
		resolveInto(r, q, reply)
	}
}

// TestScopeThroughETH: a static policy whose members evaluate target health into a
// client-dependent record asks for that record's scope.
func TestScopeThroughETH(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		record w.example.org. weighted {
			weight 1 alias net.example.org. evaluate_target_health
		}
		record net.example.org. ip {
			cidr 192.0.2.0/24 A 192.0.2.10
		}
		record plain.example.org. weighted {
			weight 1 alias net2.example.org.
		}
		record net2.example.org. simple {
			A 192.0.2.20
		}
	}`)
	if ans := resolveAnswer(r, routing.Query{Name: "w.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("192.0.0.0/16")}); ans.Scope != 24 {
		t.Errorf("weighted with evaluate_target_health into ip: scope %d, want the ip record's 24", ans.Scope)
	}
	if ans := resolveAnswer(r, routing.Query{Name: "plain.example.org.", Type: dns.TypeA, Client: netip.MustParsePrefix("192.0.0.0/16")}); ans.Scope != 0 {
		t.Errorf("static tree: scope %d, want 0", ans.Scope)
	}
}

// TestExplainNextPlugin: explain says when the next plugin answers instead.
func TestExplainNextPlugin(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
		fallthrough
		record www.example.org. simple {
			A 192.0.2.1
		}
	}`)
	for _, tc := range []struct {
		name  string
		qtype uint16
		next  bool
	}{
		{"www.example.org.", dns.TypeA, false},
		{"www.example.org.", dns.TypeTXT, true},
		{"example.org.", dns.TypeSOA, true},
		{"nope.example.org.", dns.TypeA, true},
	} {
		if _, tr := r.Explain(routing.Query{Name: tc.name, Type: tc.qtype, Client: testClient}); tr.NextPlugin != tc.next {
			t.Errorf("%s %s: next_plugin %t, want %t", tc.name, dns.TypeToString[tc.qtype], tr.NextPlugin, tc.next)
		}
	}
}

// TestOverlayNeverNXDOMAINForOwnNames: when the next plugin does not know a name the
// block has records at (or below), its NXDOMAIN becomes NODATA.
func TestOverlayNeverNXDOMAINForOwnNames(t *testing.T) {
	h := testHandler(t, `healthroute {
		fallthrough
		record www.example.org. simple {
			A 192.0.2.1
		}
		record a.deep.example.org. simple {
			A 192.0.2.2
		}
	}`)
	nx := test.HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		m.Ns = []dns.RR{test.SOA("example.org. 300 IN SOA ns1.example.org. hostmaster.example.org. 7 7200 1800 1209600 300")}
		w.WriteMsg(m)
		return dns.RcodeNameError, nil
	})
	h.Next = nx // a next plugin that knows none of these names
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
	}{
		{"www.example.org.", dns.TypeTXT, dns.RcodeSuccess},
		{"deep.example.org.", dns.TypeA, dns.RcodeSuccess}, // an empty non-terminal of the block
		{"nope.example.org.", dns.TypeA, dns.RcodeNameError},
	} {
		m, _, _ := serveRec(t, h, question(tc.name, tc.qtype))
		if m == nil || m.Rcode != tc.rcode || len(m.Ns) != 1 {
			t.Errorf("%s %s: %v, want %s with the next plugin's SOA", tc.name, dns.TypeToString[tc.qtype], m, dns.RcodeToString[tc.rcode])
		}
	}
}
