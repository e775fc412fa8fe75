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

// TestZonesUnboundSubnetCache puts Unbound's ECS cache (subnetcache) in front of an
// ip record: asked for a /16 first, then for a /24 inside it that has its own block,
// each client gets its own answer from the cache too. A record that does not depend
// on the client is cached once, for every subnet.
func TestZonesUnboundSubnetCache(t *testing.T) {
	s, api, token := zonesSwitchable(t, "", `
		record net.example.org. ip {
			cidr 192.0.2.0/24 A 192.0.2.10
			default A 198.51.100.10
		}
		record static.example.org. failover {
			primary A 192.0.2.1 check sw
			secondary A 192.0.2.2
		}`)
	unbound := zonesUnbound(t, s, "example.org.", "subnetcache iterator", `	send-client-subnet: 127.0.0.1
	max-client-subnet-ipv4: 24
	max-client-subnet-ipv6: 56`)

	steps := []struct{ subnet, want string }{
		{"192.0.0.0/16", "198.51.100.10"}, // no block holds the /16: the default (scope 24)
		{"192.0.2.0/24", "192.0.2.10"},    // must not be the /16's cached default
		{"192.0.0.0/16", "198.51.100.10"},
		{"203.0.113.0/24", "198.51.100.10"},
		{"192.0.2.0/24", "192.0.2.10"},
	}
	for _, st := range steps {
		if got := zonesAddrs(zonesAsk(t, unbound, "net.example.org.", dns.TypeA, st.subnet)); got != st.want {
			t.Errorf("net.example.org from %s through Unbound: %q, want %s", st.subnet, got, st.want)
		}
	}

	// static answers with scope 0: after one query Unbound holds it for everyone.
	if got := zonesAddrs(zonesAsk(t, unbound, "static.example.org.", dns.TypeA, "192.0.2.0/24")); got != "192.0.2.1" {
		t.Fatalf("static first: %q, want 192.0.2.1", got)
	}
	zonesOverride(t, api, token, "sw", "unhealthy")
	if got := zonesAddrs(zonesAsk(t, s.Addr, "static.example.org.", dns.TypeA, "")); got != "192.0.2.2" {
		t.Fatalf("static at the server after the override: %q, want 192.0.2.2", got)
	}
	if got := zonesAddrs(zonesAsk(t, unbound, "static.example.org.", dns.TypeA, "203.0.113.0/24")); got != "192.0.2.1" {
		t.Errorf("static from another subnet through Unbound: %q, want the answer cached once, 192.0.2.1", got)
	}
}

// zonesKey writes a DNSSEC key for zone in BIND's file format into dir and returns
// the base path (what the dnssec plugin's `key file` takes) and the key.
func zonesKey(t *testing.T, dir, zone string) (string, *dns.DNSKEY) {
	t.Helper()
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: 257, Protocol: 3, Algorithm: dns.ECDSAP256SHA256}
	priv, err := k.Generate(256)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, fmt.Sprintf("K%s+%03d+%05d", zone, k.Algorithm, k.KeyTag()))
	if err := os.WriteFile(base+".key", []byte(k.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".private", []byte(k.PrivateKeyString(priv)), 0o600); err != nil {
		t.Fatal(err)
	}
	return base, k
}

// TestZonesDNSSEC: the dnssec plugin signs a healthroute zone; a validating Unbound
// with the zone's DS as its trust anchor sets AD on answers, NODATA and NXDOMAIN
// (which the dnssec plugin turns into NODATA with an NSEC).
func TestZonesDNSSEC(t *testing.T) {
	base, key := zonesKey(t, t.TempDir(), "example.org.")
	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	dnssec {
		key file %s
	}
	healthroute {
		ttl 60
		ns ns1.example.org.
		record ns1.example.org. simple {
			A 192.0.2.53
		}
		record www.example.org. weighted {
			weight 1 A 192.0.2.1
			weight 1 A 192.0.2.2
		}
		record net.example.org. ip {
			cidr 192.0.2.0/24 A 192.0.2.10
			default A 198.51.100.10
		}
		record api.example.org. simple {
			CNAME www.example.org.
		}
	}
}`, port, base), port, "www.example.org")
	ds := key.ToDS(dns.SHA256)
	unbound := zonesUnbound(t, s, "example.org.", "validator iterator",
		fmt.Sprintf("\ttrust-anchor: \"%s\"\n\tval-log-level: 2", strings.Join(strings.Fields(ds.String()), " ")))

	ask := func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.SetEdns0(1232, true)
		m.AuthenticatedData = true
		return zonesExchange(t, unbound, m)
	}
	tests := []struct {
		name    string
		qtype   uint16
		answers bool
	}{
		{"www.example.org.", dns.TypeA, true},
		{"net.example.org.", dns.TypeA, true},
		{"api.example.org.", dns.TypeA, true},
		{"example.org.", dns.TypeNS, true},
		{"www.example.org.", dns.TypeAAAA, false}, // NODATA
		{"nope.example.org.", dns.TypeA, false},   // NXDOMAIN, signed as NODATA
	}
	for _, tc := range tests {
		m := ask(tc.name, tc.qtype)
		if !m.AuthenticatedData || m.Rcode != dns.RcodeSuccess || (len(m.Answer) > 0) != tc.answers {
			t.Errorf("%s %s through validating Unbound: %s AD=%t answers %d, want NOERROR AD with answers=%t\n%v",
				tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[m.Rcode], m.AuthenticatedData, len(m.Answer), tc.answers, m)
		}
	}
}

// TestZonesKresdStub: Knot Resolver forwarding in STUB mode (it does not chase CNAMEs
// itself) receives the whole chain and hands it to its client.
func TestZonesKresdStub(t *testing.T) {
	port := coretest.FreePort(t)
	coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		ttl 30
		record app.example.org. weighted {
			weight 1 CNAME edge.example.org.
		}
		record edge.example.org. ip {
			cidr 192.0.2.0/24 CNAME www.example.org.
			default CNAME www.example.org.
		}
		record www.example.org. failover {
			primary A 192.0.2.1
			secondary A 192.0.2.2
		}
	}
}`, port), port, "www.example.org")
	dir := t.TempDir()
	kport := coretest.FreePort(t)
	conf := fmt.Sprintf(`net.listen('127.0.0.1', %d, { kind = 'dns' })
trust_anchors.remove('.')
cache.size = 10 * MB
policy.add(policy.suffix(policy.STUB('127.0.0.1@%d'), {todname('example.org.')}))
`, kport, port)
	path := filepath.Join(dir, "kresd.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", kport)
	zonesStartResolver(t, addr, "www.example.org", dir, "kresd", "-n", "-q", "-c", path, dir)
	m := zonesAsk(t, addr, "app.example.org.", dns.TypeA, "")
	want := []string{"app.example.org.", "edge.example.org.", "www.example.org."}
	var got []string
	for _, rr := range m.Answer {
		got = append(got, rr.Header().Name)
	}
	if m.Rcode != dns.RcodeSuccess || strings.Join(got, " ") != strings.Join(want, " ") || zonesAddrs(m) != "192.0.2.1" {
		t.Errorf("app.example.org A through kresd STUB: %s %v, want the chain %v ending in 192.0.2.1", dns.RcodeToString[m.Rcode], m.Answer, want)
	}
}
