package healthroute

import (
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

// typesBlock holds every type a member can hold besides A, AAAA and CNAME, in
// several policies, with ttl lines, typed aliases and one block per type at a name.
const typesBlock = `healthroute example.org {
	check down tcp 192.0.2.99:25
	record example.org. simple {
		ttl 300
		MX 10 mail.example.org. 20 mail.example.org. 30 mx.example.net.
		TXT "v=spf1 -all" "\"two\" \"strings\""
		CAA 0 issue "ca.example.net" 0 iodef "mailto:security@example.org"
	}
	record mail.example.org. simple {
		ttl 120
		A 192.0.2.25
		AAAA 2001:db8::25
	}
	record _sip._tcp.example.org. weighted {
		ttl 30
		weight 1 SRV 10 5 5060 sip.example.org. check down
		weight 1 SRV 20 5 5060 mail.example.org.
	}
	record sip.example.org. failover {
		primary   NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp.example.org. check down
		secondary NAPTR 100 10 "U" "E2U+sip" "!^.*$!sip:info@example.org!" .
	}
	record 25.2.0.192.example.org. multivalue {
		value PTR mail.example.org.
		value PTR host
	}
	record legacy.example.org. simple {
		SPF "v=spf1 ip4:192.0.2.0/24 -all"
	}
	record sub.example.org. simple {
		ttl 3600
		NS ns1.sub.example.org. ns.example.net.
		DS 60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118
	}
	record ns1.sub.example.org. simple {
		A 192.0.2.53
	}
	record split.example.org. simple {
		alias mail.example.org. A
	}
	record split.example.org. simple {
		ttl 10
		TXT split
	}
	record into.example.org. simple {
		CNAME www.sub.example.org.
	}
	record flat.example.org. simple {
		ttl 5
		alias example.org.
	}
}`

func typesResolver(t *testing.T) *routing.Resolver {
	r, cfg := testResolver(t, typesBlock)
	r.Publish(snapshot(cfg, "down"))
	return r
}

// TestTypesAnswer asks every type the block holds and checks the records, their
// TTLs (the block's ttl line, or the healthroute default) and the policy's choice.
func TestTypesAnswer(t *testing.T) {
	r := typesResolver(t)
	tests := []struct {
		name  string
		qtype uint16
		want  []string
	}{
		{"example.org.", dns.TypeMX, []string{"example.org.\t300\tIN\tMX\t10 mail.example.org.", "example.org.\t300\tIN\tMX\t20 mail.example.org.", "example.org.\t300\tIN\tMX\t30 mx.example.net."}},
		{"example.org.", dns.TypeTXT, []string{"example.org.\t300\tIN\tTXT\t\"two\" \"strings\"", "example.org.\t300\tIN\tTXT\t\"v=spf1 -all\""}},
		{"example.org.", dns.TypeCAA, []string{"example.org.\t300\tIN\tCAA\t0 iodef \"mailto:security@example.org\"", "example.org.\t300\tIN\tCAA\t0 issue \"ca.example.net\""}},
		{"_sip._tcp.example.org.", dns.TypeSRV, []string{"_sip._tcp.example.org.\t30\tIN\tSRV\t20 5 5060 mail.example.org."}},
		{"sip.example.org.", dns.TypeNAPTR, []string{"sip.example.org.\t60\tIN\tNAPTR\t100 10 \"U\" \"E2U+sip\" \"!^.*$!sip:info@example.org!\" ."}},
		{"25.2.0.192.example.org.", dns.TypePTR, []string{"25.2.0.192.example.org.\t60\tIN\tPTR\thost.example.org.", "25.2.0.192.example.org.\t60\tIN\tPTR\tmail.example.org."}},
		{"legacy.example.org.", dns.TypeSPF, []string{"legacy.example.org.\t60\tIN\tSPF\t\"v=spf1 ip4:192.0.2.0/24 -all\""}},
		{"sub.example.org.", dns.TypeDS, []string{"sub.example.org.\t3600\tIN\tDS\t60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118"}},
		{"split.example.org.", dns.TypeA, []string{"split.example.org.\t120\tIN\tA\t192.0.2.25"}},
		{"split.example.org.", dns.TypeTXT, []string{"split.example.org.\t10\tIN\tTXT\t\"split\""}},
		// An alias answers with its target's TTL, not its own block's.
		{"flat.example.org.", dns.TypeMX, []string{"flat.example.org.\t300\tIN\tMX\t10 mail.example.org.", "flat.example.org.\t300\tIN\tMX\t20 mail.example.org.", "flat.example.org.\t300\tIN\tMX\t30 mx.example.net."}},
	}
	for _, tc := range tests {
		a := resolveAnswer(r, routing.Query{Name: tc.name, Type: tc.qtype, Client: testClient})
		var got []string
		for _, rr := range a.RRs {
			got = append(got, rr.String())
		}
		slices.Sort(got)
		if a.Rcode != dns.RcodeSuccess || !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: %s %q, want %q", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[a.Rcode], got, tc.want)
		}
	}
}

// TestTypesNoData checks that other types at these names get NODATA with the SOA,
// a typed alias included, and fall through with fallthrough.
func TestTypesNoData(t *testing.T) {
	r := typesResolver(t)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"example.org.", dns.TypeA}, {"example.org.", dns.TypeSRV}, {"_sip._tcp.example.org.", dns.TypeTXT},
		{"sip.example.org.", dns.TypeA}, {"legacy.example.org.", dns.TypeTXT}, {"split.example.org.", dns.TypeAAAA},
		{"mail.example.org.", dns.TypeMX}, {"flat.example.org.", dns.TypeA},
	} {
		a := resolveAnswer(r, routing.Query{Name: q.name, Type: q.qtype, Client: testClient})
		if a.Rcode != dns.RcodeSuccess || len(a.RRs) != 0 || len(a.Ns) != 1 || a.Ns[0].Header().Rrtype != dns.TypeSOA || !a.Pass {
			t.Errorf("%s %s: %s answer %v authority %v pass %v, want NODATA with the SOA", q.name, dns.TypeToString[q.qtype], dns.RcodeToString[a.Rcode], a.RRs, a.Ns, a.Pass)
		}
	}
}

// TestTypesAdditional checks the additional section of MX and SRV answers: the
// addresses of the block's targets, each once, none for names outside the zone.
func TestTypesAdditional(t *testing.T) {
	r := typesResolver(t)
	a := resolveAnswer(r, routing.Query{Name: "example.org.", Type: dns.TypeMX, Client: testClient})
	if got := rrValues(a.Extra); strings.Join(got, ",") != "192.0.2.25,2001:db8::25" {
		t.Errorf("MX additional %v, want mail.example.org.'s A and AAAA once", a.Extra)
	}
	a = resolveAnswer(r, routing.Query{Name: "_sip._tcp.example.org.", Type: dns.TypeSRV, Client: testClient})
	if got := rrValues(a.Extra); strings.Join(got, ",") != "192.0.2.25,2001:db8::25" {
		t.Errorf("SRV additional %v, want the chosen target's addresses", a.Extra)
	}
	a = resolveAnswer(r, routing.Query{Name: "example.org.", Type: dns.TypeTXT, Client: testClient})
	if len(a.Extra) != 0 {
		t.Errorf("TXT additional %v, want none", a.Extra)
	}
}

// TestTypesReferral checks NS below the apex: a referral for the cut and every name
// below it, with in-bailiwick glue, and the DS answered at the cut.
func TestTypesReferral(t *testing.T) {
	r := typesResolver(t)
	for _, n := range []string{"sub.example.org.", "www.sub.example.org.", "ns1.sub.example.org."} {
		for _, qt := range []uint16{dns.TypeA, dns.TypeNS, dns.TypeMX} {
			a := resolveAnswer(r, routing.Query{Name: n, Type: qt, Client: testClient})
			if !a.Referral || len(a.RRs) != 0 || typesNS(a.Ns) != "ns.example.net.,ns1.sub.example.org." || strings.Join(rrValues(a.Extra), ",") != "192.0.2.53" {
				t.Errorf("%s %s: referral %v answer %v authority %v additional %v, want a referral to sub.example.org. with ns1's glue", n, dns.TypeToString[qt], a.Referral, a.RRs, a.Ns, a.Extra)
			}
		}
	}
	// A CNAME into the delegation: the CNAME, authoritative, and the referral.
	a := resolveAnswer(r, routing.Query{Name: "into.example.org.", Type: dns.TypeA, Client: testClient})
	if a.Referral || len(a.RRs) != 1 || a.RRs[0].Header().Rrtype != dns.TypeCNAME || typesNS(a.Ns) != "ns.example.net.,ns1.sub.example.org." || len(a.Extra) != 1 {
		t.Errorf("CNAME into the delegation: referral %v answer %v authority %v additional %v, want the CNAME and the referral", a.Referral, a.RRs, a.Ns, a.Extra)
	}
	if a := resolveAnswer(r, routing.Query{Name: "www.sub.example.org.", Type: dns.TypeDS, Client: testClient}); !a.Referral {
		t.Errorf("DS below the cut: %+v, want a referral", a)
	}
}

// TestTypesRoundTrip imports route53/testdata/types.records.json, ttl lines included,
// and checks that every record set answers its own values with its own TTL.
func TestTypesRoundTrip(t *testing.T) {
	f, err := os.Open("route53/testdata/types.records.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sets, err := route53.ReadRecordSets(f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := route53.Convert(route53.Input{RecordSets: sets})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := testResolver(t, "healthroute example.com {\n"+res.Corefile+"}")
	checked := 0
	for _, rs := range sets {
		if rs.Type == "SOA" || (rs.Type == "NS" && rs.Name == "example.com.") || rs.AliasTarget != nil {
			continue
		}
		name := strings.ReplaceAll(rs.Name, `\052`, "wild")
		qt := dns.StringToType[rs.Type]
		var want []string
		for _, v := range rs.ResourceRecords {
			rr, err := dns.NewRR(name + " " + strconv.FormatInt(*rs.TTL, 10) + " IN " + rs.Type + " " + v.Value)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, rr.String())
		}
		a := resolveAnswer(r, routing.Query{Name: strings.ToLower(dns.Fqdn(name)), Type: qt, Client: testClient})
		got := a.RRs
		if a.Referral {
			got = a.Ns
		}
		var gs []string
		for _, rr := range got {
			gs = append(gs, rr.String())
		}
		slices.Sort(gs)
		slices.Sort(want)
		if !slices.Equal(gs, want) {
			t.Errorf("%s %s: %q, want %q", name, rs.Type, gs, want)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d record sets", checked)
	}
}

// typesNS returns the NS records' targets, sorted, joined by ",".
func typesNS(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.(*dns.NS).Ns)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestTypesSetIdentifierScope checks that set identifiers are unique per name and
// type, as Route 53 scopes them: one id may name an A and an AAAA member.
func TestTypesSetIdentifierScope(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
	record a.example.org. weighted {
		weight 1 A 192.0.2.1 id east
		weight 1 AAAA 2001:db8::1 id east
	}
}`)
	if got := values(r, "a.example.org.", dns.TypeAAAA); got != "2001:db8::1" {
		t.Errorf("AAAA: %s", got)
	}
}

// TestTypesClientPolicies checks types in the policies that choose by client: a
// geolocation SRV, an ip TXT and a latency MX.
func TestTypesClientPolicies(t *testing.T) {
	r, cfg := testResolver(t, `healthroute {
	region us-east-1 38.9 -77.0
	region eu-west-1 53.3 -6.3
	record _x._tcp.example.org. geolocation {
		continent EU SRV 1 1 443 eu.example.net.
		default SRV 1 1 443 us.example.net.
	}
	record office.example.org. ip {
		cidr 192.0.2.0/24 TXT inside
		default TXT outside
	}
	record example.org. latency {
		region us-east-1 MX 10 us.example.net.
		region eu-west-1 MX 10 eu.example.net.
	}
}`)
	r.Publish(snapshot(cfg))
	berlin := routing.ClientLocation{Country: "DE", Continent: "EU", Lat: 52.5, Lon: 13.4, HasCoords: true}
	boston := routing.ClientLocation{Country: "US", Continent: "NA", Lat: 42.4, Lon: -71.1, HasCoords: true}
	tests := []struct {
		name   string
		qtype  uint16
		client string
		loc    routing.ClientLocation
		want   string
	}{
		{"_x._tcp.example.org.", dns.TypeSRV, "203.0.113.1/32", berlin, "eu.example.net."},
		{"_x._tcp.example.org.", dns.TypeSRV, "203.0.113.1/32", boston, "us.example.net."},
		{"office.example.org.", dns.TypeTXT, "192.0.2.9/32", routing.ClientLocation{}, `"inside"`},
		{"office.example.org.", dns.TypeTXT, "198.51.100.9/32", routing.ClientLocation{}, `"outside"`},
		{"example.org.", dns.TypeMX, "203.0.113.1/32", berlin, "eu.example.net."},
		{"example.org.", dns.TypeMX, "203.0.113.1/32", boston, "us.example.net."},
	}
	for _, tc := range tests {
		a := resolveAnswer(r, routing.Query{Name: tc.name, Type: tc.qtype, Client: netip.MustParsePrefix(tc.client), Loc: tc.loc})
		if len(a.RRs) != 1 || !strings.HasSuffix(a.RRs[0].String(), tc.want) {
			t.Errorf("%s %s for %s %s: %v, want %s", tc.name, dns.TypeToString[tc.qtype], tc.client, tc.loc.Country, a.RRs, tc.want)
		}
	}
}
