package healthroute

import (
	"context"
	"net"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

func testHandler(t testing.TB, block string) *HealthRoute {
	t.Helper()
	cfg := mustParse(t, block)
	h := newHandler(cfg, &registry{})
	h.Next = test.NextHandler(dns.RcodeNameError, nil)
	// Its answer counts go with the test: a later test (or a -count run) whose block
	// has a zone in common would otherwise take them over as a reload's block does.
	t.Cleanup(func() { shared.counting.drop(cfg) })
	return h
}

const handlerBlock = `healthroute {
	ttl 30
	record www.example.org. weighted {
		weight 10 A 192.0.2.1
	}
	record net.example.org. ip {
		cidr 192.0.2.0/24 A 192.0.2.10
		cidr 2001:db8::/32 A 192.0.2.11
		default A 192.0.2.12
	}
}`

func TestServeDNS(t *testing.T) {
	h := testHandler(t, handlerBlock)
	tests := []test.Case{
		{Qname: "www.example.org.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("www.example.org. 30 IN A 192.0.2.1")}},
		{Qname: "WWW.Example.ORG.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("www.example.org. 30 IN A 192.0.2.1")}},
		{Qname: "www.example.org.", Qtype: dns.TypeAAAA, Ns: []dns.RR{test.SOA("example.org. 30 IN SOA example.org. hostmaster.example.org. 1 7200 1800 1209600 30")}},
		{Qname: "nope.example.org.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA("example.org. 30 IN SOA example.org. hostmaster.example.org. 1 7200 1800 1209600 30")}},
		{Qname: "net.example.org.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("net.example.org. 30 IN A 192.0.2.12")}}, // source 10.240.0.1: default
	}
	for _, tc := range tests {
		t.Run(tc.Qname+"/"+dns.TypeToString[tc.Qtype], func(t *testing.T) {
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := h.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
				t.Fatal(err)
			}
			if !rec.Msg.Authoritative {
				t.Error("answer is not authoritative")
			}
			if err := test.SortAndCheck(rec.Msg, tc); err != nil {
				t.Error(err)
			}
		})
	}
}

// ecsQuery builds a query with an ECS option.
func ecsQuery(name string, family uint16, addr net.IP, source, scope uint8) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{
		Code: dns.EDNS0SUBNET, Family: family, SourceNetmask: source, SourceScope: scope, Address: addr})
	return m
}

func TestServeDNSClientSubnet(t *testing.T) {
	h := testHandler(t, handlerBlock)
	tests := []struct {
		name      string
		q         *dns.Msg
		wantRcode int
		want      string
		wantScope int // -1: no ECS option expected
	}{
		{"ECS v4 /24 in a block", ecsQuery("net.example.org.", 1, net.ParseIP("192.0.2.0").To4(), 24, 0), dns.RcodeSuccess, "192.0.2.10", 24},
		{"ECS v6 /56 in a block", ecsQuery("net.example.org.", 2, net.ParseIP("2001:db8:1::"), 56, 0), dns.RcodeSuccess, "192.0.2.11", 32},                      // the whole /32 block answers alike
		{"ECS v4 /16: too short for the /24 block", ecsQuery("net.example.org.", 1, net.ParseIP("192.0.0.0").To4(), 16, 0), dns.RcodeSuccess, "192.0.2.12", 24}, // RFC 7871 7.2.1: longer than the source
		{"ECS IPv4-mapped in family 2", ecsQuery("net.example.org.", 2, net.ParseIP("::ffff:192.0.2.0"), 120, 0), dns.RcodeSuccess, "192.0.2.10", 120},
		{"weighted answer: scope 0", ecsQuery("www.example.org.", 1, net.ParseIP("192.0.2.0").To4(), 24, 0), dns.RcodeSuccess, "192.0.2.1", 0},
		{"scope set in a query: FORMERR", ecsQuery("net.example.org.", 1, net.ParseIP("192.0.2.0").To4(), 24, 8), dns.RcodeFormatError, "", -1},
		{"no family, /0 (dig +subnet=0): as for any client, scope 0", ecsQuery("net.example.org.", 0, net.IPv4(0, 0, 0, 0), 0, 0), dns.RcodeSuccess, "192.0.2.12", 0},
		{"unknown family: FORMERR", ecsQuery("net.example.org.", 7, net.ParseIP("192.0.2.0").To4(), 24, 0), dns.RcodeFormatError, "", -1},
		// RFC 7871 section 6: address bits set past the source prefix are a malformed option.
		{"v4 address bits past the source prefix: FORMERR", ecsQuery("net.example.org.", 1, net.ParseIP("192.0.2.77").To4(), 24, 0), dns.RcodeFormatError, "", -1},
		{"v6 address bits past the source prefix: FORMERR", ecsQuery("net.example.org.", 2, net.ParseIP("2001:db8:1::1"), 56, 0), dns.RcodeFormatError, "", -1},
		{"IPv4-mapped address bits past the source prefix: FORMERR", ecsQuery("net.example.org.", 2, net.ParseIP("::ffff:192.0.2.77"), 120, 0), dns.RcodeFormatError, "", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := dnstest.NewRecorder(&test.ResponseWriter{RemoteIP: "10.240.0.1"})
			rcode, err := h.ServeDNS(context.Background(), rec, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantRcode == dns.RcodeFormatError {
				if rcode != dns.RcodeFormatError || rec.Msg != nil {
					t.Fatalf("rcode %d, written %v; want FORMERR returned and nothing written", rcode, rec.Msg)
				}
				return
			}
			if got := rrValues(rec.Msg.Answer); len(got) != 1 || got[0] != tc.want {
				t.Errorf("answer %v, want %s", got, tc.want)
			}
			var ecs *dns.EDNS0_SUBNET
			if o := rec.Msg.IsEdns0(); o != nil {
				for _, opt := range o.Option {
					ecs, _ = opt.(*dns.EDNS0_SUBNET)
				}
			}
			if ecs == nil || int(ecs.SourceScope) != tc.wantScope || ecs.SourceNetmask != tc.q.IsEdns0().Option[0].(*dns.EDNS0_SUBNET).SourceNetmask {
				t.Errorf("echoed ECS %v, want scope %d", ecs, tc.wantScope)
			}
		})
	}
}

// BenchmarkServeDNS measures the whole handler per policy, a multivalue answer and a
// two-step CNAME chase into it included; its allocations are the response message's own.
func BenchmarkServeDNS(b *testing.B) {
	h := testHandler(b, `healthroute {`+checks+`
		record w.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 10 A 192.0.2.2 check c2
			weight 10 A 192.0.2.3 check c3
		}
		record f.example.org. failover {
			primary alias w.example.org.
			secondary A 198.51.100.1
		}
		record ip.example.org. ip {
			cidr 10.240.0.0/16 alias f.example.org.
			default A 192.0.2.9
		}
		record m.example.org. multivalue {
			value A 192.0.2.1 check c1
			value A 192.0.2.2 check c2
			value A 192.0.2.3 check c3
		}
		record c.example.org. simple {
			CNAME cc.example.org.
		}
		record cc.example.org. weighted {
			weight 1 CNAME m.example.org.
		}
	}`)
	for _, name := range []string{"w.example.org.", "f.example.org.", "ip.example.org.", "m.example.org.", "c.example.org."} {
		b.Run(name, func(b *testing.B) {
			q := new(dns.Msg)
			q.SetQuestion(name, dns.TypeA)
			w := &test.ResponseWriter{RemoteIP: "10.240.0.1"}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeDNS(ctx, w, q)
			}
		})
	}
}

// TestFallthrough: with fallthrough, names not defined here go to the next plugin;
// defined names and names outside the fallthrough zones do not.
func TestFallthrough(t *testing.T) {
	h := testHandler(t, `healthroute {
		fallthrough sub.example.org
		record www.example.org. simple {
			A 192.0.2.1
		}
	}`)
	h.Next = test.NextHandler(dns.RcodeServerFailure, nil) // a marker: "the next plugin ran"
	tests := []struct {
		qname     string
		wantNext  bool
		wantRcode int
	}{
		{"nope.sub.example.org.", true, dns.RcodeServerFailure},
		{"nope.example.org.", false, dns.RcodeNameError},
		{"www.example.org.", false, dns.RcodeSuccess},
	}
	for _, tc := range tests {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		q := new(dns.Msg)
		q.SetQuestion(tc.qname, dns.TypeA)
		rcode, _ := h.ServeDNS(context.Background(), rec, q)
		if ran := rcode == dns.RcodeServerFailure && rec.Msg == nil; ran != tc.wantNext {
			t.Errorf("%s: next plugin ran = %t, want %t", tc.qname, ran, tc.wantNext)
		}
		if !tc.wantNext && (rec.Msg == nil || rec.Msg.Rcode != tc.wantRcode) {
			t.Errorf("%s: answer %v, want rcode %s", tc.qname, rec.Msg, dns.RcodeToString[tc.wantRcode])
		}
	}
}
