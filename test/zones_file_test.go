package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

const zonesFile = `$ORIGIN example.org.
$TTL 3600
@        IN SOA   ns1.example.org. hostmaster.example.org. 2024060101 7200 1800 1209600 300
         IN NS    ns1.example.org.
         IN MX    10 mail.example.org.
         IN TXT   "apex text"
ns1      IN A     192.0.2.53
mail     IN A     192.0.2.25
www      IN TXT   "from the zone file"
host.lab IN A     192.0.2.60
`

// TestZonesOverlayFile: healthroute with fallthrough in front of file in one server
// block answers only its records; the zone file answers the rest of the zone with
// its real SOA.
func TestZonesOverlayFile(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "db.example.org")
	if err := os.WriteFile(zone, []byte(zonesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		ttl 30
		fallthrough
		record www.example.org. failover {
			primary A 192.0.2.1
			secondary A 192.0.2.2
		}
		record api.example.org. simple {
			CNAME www.example.org.
		}
		record only.example.org. simple {
			A 192.0.2.7
		}
		record x.deep.example.org. simple {
			A 192.0.2.8
		}
	}
	file %s
	transfer {
		to *
	}
}`, port, zone), port, "www.example.org")
	soa := "example.org. 3600 IN SOA ns1.example.org. hostmaster.example.org. 2024060101 7200 1800 1209600 300\n"
	ns := "example.org. 3600 IN NS ns1.example.org.\n" // file's authority section on answers
	tests := []struct {
		name   string
		qtype  uint16
		rcode  int
		answer string
		ns     string
	}{
		{"example.org.", dns.TypeSOA, dns.RcodeSuccess, "example.org. 3600 IN SOA ns1.example.org. hostmaster.example.org. 2024060101 7200 1800 1209600 300\n", ns},
		{"example.org.", dns.TypeNS, dns.RcodeSuccess, "example.org. 3600 IN NS ns1.example.org.\n", ""},
		{"example.org.", dns.TypeMX, dns.RcodeSuccess, "example.org. 3600 IN MX 10 mail.example.org.\n", ns},
		{"example.org.", dns.TypeTXT, dns.RcodeSuccess, "example.org. 3600 IN TXT \"apex text\"\n", ns},
		{"www.example.org.", dns.TypeTXT, dns.RcodeSuccess, "www.example.org. 3600 IN TXT \"from the zone file\"\n", ns},
		{"www.example.org.", dns.TypeA, dns.RcodeSuccess, "www.example.org. 30 IN A 192.0.2.1\n", ""},
		{"www.example.org.", dns.TypeAAAA, dns.RcodeSuccess, "", soa},
		{"lab.example.org.", dns.TypeA, dns.RcodeSuccess, "", soa}, // an empty non-terminal
		{"nope.example.org.", dns.TypeA, dns.RcodeNameError, "", soa},
		// Names only the block has: the zone file's NXDOMAIN becomes NODATA.
		{"only.example.org.", dns.TypeTXT, dns.RcodeSuccess, "", soa},
		{"deep.example.org.", dns.TypeA, dns.RcodeSuccess, "", soa},
		{"api.example.org.", dns.TypeA, dns.RcodeSuccess, "api.example.org. 30 IN CNAME www.example.org.\nwww.example.org. 30 IN A 192.0.2.1\n", ""},
	}
	// A zone transfer goes past healthroute to transfer, which serves the zone file.
	axfr := new(dns.Msg)
	axfr.SetAxfr("example.org.")
	env, err := (&dns.Transfer{}).In(axfr, s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	var transferred []dns.RR
	for e := range env {
		if e.Error != nil {
			t.Fatalf("AXFR: %v", e.Error)
		}
		transferred = append(transferred, e.RR...)
	}
	if n := len(transferred); n != 9 { // SOA, the 7 other records of the file, SOA
		t.Errorf("AXFR: %d records, want the zone file's 7 between two SOAs\n%s", n, zonesSection(transferred))
	}
	for _, tc := range tests {
		m := zonesAsk(t, s.Addr, tc.name, tc.qtype, "")
		if m.Rcode != tc.rcode || zonesSection(m.Answer) != tc.answer || zonesSection(m.Ns) != tc.ns || !m.Authoritative {
			t.Errorf("%s %s: got %s aa=%t\n%s%s\nwant %s\n%s%s", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[m.Rcode], m.Authoritative,
				zonesSection(m.Answer), zonesSection(m.Ns), dns.RcodeToString[tc.rcode], tc.answer, tc.ns)
		}
	}
}

// TestZonesStandalone: without fallthrough, soa and ns make healthroute the whole
// zone: the apex SOA and NS (with the in-zone server's address), RFC 2308 negative
// answers, and transfers and NOTIFY refused as stock CoreDNS refuses them.
func TestZonesStandalone(t *testing.T) {
	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		ttl 120
		soa ns1.example.org. admin.example.org. 2024010101 3600 600 604800 45
		ns ns1.example.org. ns2.example.net.
		record ns1.example.org. simple {
			A 192.0.2.53
		}
		record www.example.org. simple {
			A 192.0.2.1
		}
	}
}`, port), port, "www.example.org")
	soa := "example.org. 120 IN SOA ns1.example.org. admin.example.org. 2024010101 3600 600 604800 45\n"
	neg := strings.Replace(soa, " 120 ", " 45 ", 1) // min(SOA TTL, MINIMUM)
	m := zonesAsk(t, s.Addr, "example.org.", dns.TypeSOA, "")
	if zonesSection(m.Answer) != soa {
		t.Errorf("apex SOA:\n%swant\n%s", zonesSection(m.Answer), soa)
	}
	m = zonesAsk(t, s.Addr, "example.org.", dns.TypeNS, "")
	if want := "example.org. 120 IN NS ns1.example.org.\nexample.org. 120 IN NS ns2.example.net.\n"; zonesSection(m.Answer) != want ||
		zonesSection(m.Extra) != "ns1.example.org. 120 IN A 192.0.2.53\n" {
		t.Errorf("apex NS:\n%s%s\nwant\n%sns1.example.org. 120 IN A 192.0.2.53", zonesSection(m.Answer), zonesSection(m.Extra), want)
	}
	if a := zonesAsk(t, s.Addr, "ns1.example.org.", dns.TypeA, ""); zonesAddrs(a) != "192.0.2.53" {
		t.Errorf("ns1 A: %v", a)
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
	}{
		{"www.example.org.", dns.TypeAAAA, dns.RcodeSuccess},
		{"example.org.", dns.TypeMX, dns.RcodeSuccess},
		{"nope.example.org.", dns.TypeA, dns.RcodeNameError},
	} {
		m := zonesAsk(t, s.Addr, tc.name, tc.qtype, "")
		if m.Rcode != tc.rcode || len(m.Answer) != 0 || zonesSection(m.Ns) != neg {
			t.Errorf("%s %s: %s\n%swant %s with\n%s", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[m.Rcode], zonesSection(m.Ns), dns.RcodeToString[tc.rcode], neg)
		}
	}
	axfr := new(dns.Msg)
	axfr.SetQuestion("example.org.", dns.TypeAXFR)
	if m := zonesExchange(t, s.Addr, axfr); m.Rcode != dns.RcodeRefused {
		t.Errorf("AXFR: %s, want REFUSED", dns.RcodeToString[m.Rcode])
	}
	notify := new(dns.Msg)
	notify.SetNotify("example.org.")
	if m := zonesExchange(t, s.Addr, notify); m.Rcode != dns.RcodeNotImplemented {
		t.Errorf("NOTIFY: %s, want NOTIMP", dns.RcodeToString[m.Rcode])
	}
}

// TestZonesCNAMEChains: CNAMEs through the block's own names come back as the whole
// chain, each step chosen by its own policy for the same client; loops are cut.
func TestZonesCNAMEChains(t *testing.T) {
	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		ttl 30
		record one.example.org. simple {
			CNAME www.example.org.
		}
		record two.example.org. weighted {
			weight 1 CNAME net.example.org.
		}
		record three.example.org. failover {
			primary CNAME two.example.org.
			secondary CNAME far.example.org.
		}
		record net.example.org. ip {
			cidr 192.0.2.0/24 CNAME www.example.org.
			default CNAME far.example.org.
		}
		record www.example.org. simple {
			A 192.0.2.1
		}
		record far.example.org. simple {
			A 198.51.100.1
		}
		record loop1.example.org. simple {
			CNAME loop2.example.org.
		}
		record loop2.example.org. simple {
			CNAME loop1.example.org.
		}
	}
}`, port), port, "www.example.org")
	tests := []struct {
		name, subnet, want string
		scope              int
	}{
		{"one", "", "one.example.org. 30 IN CNAME www.example.org.\nwww.example.org. 30 IN A 192.0.2.1\n", -1},
		{"two", "192.0.2.0/24", "two.example.org. 30 IN CNAME net.example.org.\nnet.example.org. 30 IN CNAME www.example.org.\nwww.example.org. 30 IN A 192.0.2.1\n", 24},
		{"three", "203.0.113.0/24", "three.example.org. 30 IN CNAME two.example.org.\ntwo.example.org. 30 IN CNAME net.example.org.\nnet.example.org. 30 IN CNAME far.example.org.\nfar.example.org. 30 IN A 198.51.100.1\n", 5},
		{"loop1", "", "loop1.example.org. 30 IN CNAME loop2.example.org.\nloop2.example.org. 30 IN CNAME loop1.example.org.\n", -1},
	}
	for _, tc := range tests {
		m := zonesAsk(t, s.Addr, tc.name+".example.org.", dns.TypeA, tc.subnet)
		if got := zonesSection(m.Answer); got != tc.want || m.Rcode != dns.RcodeSuccess || (tc.subnet != "" && zonesScope(m) != tc.scope) {
			t.Errorf("%s from %q: %s scope %d\n%swant\n%sscope %d", tc.name, tc.subnet, dns.RcodeToString[m.Rcode], zonesScope(m), got, tc.want, tc.scope)
		}
	}
}

// TestZonesCacheInFront: CoreDNS's cache in the same block passes healthroute's
// zones through, so a client-dependent answer never reaches another client and an
// override is seen at once, whatever the record's TTL.
func TestZonesCacheInFront(t *testing.T) {
	s, api, token := zonesSwitchable(t, "cache 3600", `
		record net.example.org. ip {
			cidr 192.0.2.0/24 A 192.0.2.10
			default A 198.51.100.10
		}
		record www.example.org. failover {
			primary A 192.0.2.1 check sw
			secondary A 192.0.2.2
		}`)
	for range 2 {
		if got := zonesAddrs(zonesAsk(t, s.Addr, "net.example.org.", dns.TypeA, "192.0.2.0/24")); got != "192.0.2.10" {
			t.Fatalf("client in 192.0.2.0/24: %s, want 192.0.2.10", got)
		}
		if got := zonesAddrs(zonesAsk(t, s.Addr, "net.example.org.", dns.TypeA, "203.0.113.0/24")); got != "198.51.100.10" {
			t.Fatalf("client in 203.0.113.0/24 after 192.0.2.0/24 was answered: %s, want 198.51.100.10", got)
		}
	}
	if got := zonesAddrs(zonesAsk(t, s.Addr, "www.example.org.", dns.TypeA, "")); got != "192.0.2.1" {
		t.Fatalf("www before the override: %s", got)
	}
	zonesOverride(t, api, token, "sw", "unhealthy")
	if got := zonesAddrs(zonesAsk(t, s.Addr, "www.example.org.", dns.TypeA, "")); got != "192.0.2.2" {
		t.Errorf("www right after the primary was overridden unhealthy: %s, want 192.0.2.2 (not the cached 192.0.2.1)", got)
	}
}

// TestZonesCorefileExample serves Corefile.example (as `make run` does) on free
// ports and asks both of its server blocks.
func TestZonesCorefileExample(t *testing.T) {
	b, err := os.ReadFile("../Corefile.example")
	if err != nil {
		t.Fatal(err)
	}
	zone, err := filepath.Abs("../examples/db.example.net")
	if err != nil {
		t.Fatal(err)
	}
	port := coretest.FreePort(t)
	ports := map[string]int{}
	corefile := string(b)
	for _, p := range []string{"8080", "8181", "9153", "8053"} {
		ports[p] = coretest.FreePort(t)
		corefile = strings.ReplaceAll(corefile, "127.0.0.1:"+p, fmt.Sprintf("127.0.0.1:%d", ports[p]))
	}
	corefile = strings.ReplaceAll(corefile, ":1053 {", fmt.Sprintf(":%d {", port))
	corefile = strings.ReplaceAll(corefile, "file examples/db.example.net", "file "+zone)
	s := coretest.Start(t, corefile, port, "www.example.org")
	if m := zonesAsk(t, s.Addr, "example.net.", dns.TypeSOA, ""); !strings.Contains(zonesSection(m.Answer), " 2024060101 ") {
		t.Errorf("example.net SOA: %v, want the zone file's", m.Answer)
	}
	if m := zonesAsk(t, s.Addr, "www.example.net.", dns.TypeTXT, ""); !strings.Contains(zonesSection(m.Answer), "served by the zone file") {
		t.Errorf("www.example.net TXT: %v, want the zone file's", m.Answer)
	}
	if m := zonesAsk(t, s.Addr, "api.example.net.", dns.TypeA, ""); len(m.Answer) != 2 {
		t.Errorf("api.example.net A: %v, want the CNAME and www's A", m.Answer)
	}
	if m := zonesAsk(t, s.Addr, "office.example.org.", dns.TypeA, "192.0.2.0/24"); zonesAddrs(m) != "192.0.2.40" {
		t.Errorf("office.example.org from 192.0.2.0/24: %v", m.Answer)
	}
	// Both blocks name the api address, so the status page and its views show both.
	var recs struct{ Records []struct{ Name string } }
	getJSON(t, fmt.Sprintf("http://127.0.0.1:%d/v1/records", ports["8053"]), &recs)
	seen := map[string]bool{}
	for _, r := range recs.Records {
		seen[r.Name] = true
	}
	if !seen["www.example.org."] || !seen["www.example.net."] {
		t.Errorf("/v1/records of Corefile.example names %v, want both blocks' records (www.example.org. and www.example.net.)", seen)
	}
}

// TestZonesNextToForwardAndRewrite: with fallthrough, what the block does not define
// reaches forward; rewrite runs before healthroute, which answers the rewritten name.
func TestZonesNextToForwardAndRewrite(t *testing.T) {
	upstream := startUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 5}, Txt: []string{"forwarded"}}}
		w.WriteMsg(m)
	})

	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	rewrite name exact alias.example.org. www.example.org.
	healthroute {
		fallthrough
		record www.example.org. simple {
			A 192.0.2.1
		}
	}
	forward . %s
}`, port, upstream), port, "www.example.org")
	if m := zonesAsk(t, s.Addr, "nope.example.org.", dns.TypeTXT, ""); len(m.Answer) != 1 || !strings.Contains(m.Answer[0].String(), "forwarded") {
		t.Errorf("a name the block does not define: %v, want the forwarded answer", m.Answer)
	}
	if m := zonesAsk(t, s.Addr, "www.example.org.", dns.TypeTXT, ""); len(m.Answer) != 1 || !strings.Contains(m.Answer[0].String(), "forwarded") {
		t.Errorf("a type the block does not define: %v, want the forwarded answer", m.Answer)
	}
	if got := zonesAddrs(zonesAsk(t, s.Addr, "alias.example.org.", dns.TypeA, "")); got != "192.0.2.1" {
		t.Errorf("alias rewritten to www: %q, want 192.0.2.1", got)
	}
}
