package test

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// typesZoneFile and typesBlock hold the same static records: one served by CoreDNS's
// file plugin, one by healthroute.
const typesZoneFile = `$ORIGIN example.org.
@          3600 IN SOA   ns1.example.org. hostmaster.example.org. 1 7200 1800 1209600 300
@          60   IN NS    ns1.example.org.
@          300  IN MX    10 mail.example.org.
@          300  IN MX    20 mx.example.net.
@          300  IN TXT   "v=spf1 -all"
@          300  IN TXT   "two" "strings"
@          300  IN CAA   0 issue "ca.example.net"
ns1        60   IN A     192.0.2.53
mail       120  IN A     192.0.2.25
mail       120  IN AAAA  2001:db8::25
_sip._tcp  30   IN SRV   10 5 5060 mail.example.org.
_sip._tcp  30   IN SRV   20 5 5060 sip.example.net.
sip        60   IN NAPTR 100 10 "U" "E2U+sip" "!^.*$!sip:info@example.org!" .
25.2.0.192 60   IN PTR   mail.example.org.
legacy     60   IN SPF   "v=spf1 ip4:192.0.2.0/24 -all"
sub        3600 IN NS    ns1.sub.example.org.
sub        3600 IN NS    ns.example.net.
sub        3600 IN DS    60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118
ns1.sub    60   IN A     192.0.2.53
into       60   IN CNAME www.sub.example.org.
`

const typesBlock = `ns ns1.example.org.
		record example.org. simple {
			ttl 300
			MX 10 mail.example.org. 20 mx.example.net.
			TXT "v=spf1 -all" "\"two\" \"strings\""
			CAA 0 issue "ca.example.net"
		}
		record ns1.example.org. simple {
			A 192.0.2.53
		}
		record mail.example.org. simple {
			ttl 120
			A 192.0.2.25
			AAAA 2001:db8::25
		}
		record _sip._tcp.example.org. simple {
			ttl 30
			SRV 10 5 5060 mail.example.org. 20 5 5060 sip.example.net.
		}
		record sip.example.org. simple {
			NAPTR 100 10 "U" "E2U+sip" "!^.*$!sip:info@example.org!" .
		}
		record 25.2.0.192.example.org. simple {
			PTR mail
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
		record into.example.org. simple {
			CNAME www.sub.example.org.
		}`

// typesSection renders a section's records in wire format, sorted, leaving out OPT.
func typesSection(t *testing.T, rrs []dns.RR) string {
	t.Helper()
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		buf := make([]byte, dns.Len(rr)+64)
		n, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			t.Fatalf("pack %v: %v", rr, err)
		}
		out = append(out, hex.EncodeToString(buf[:n])+" "+rr.String())
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// TestTypesMatchFile serves the same static records with healthroute and with
// CoreDNS's file plugin in one process, and checks every name and type: the same
// rcode and authoritative bit, byte for byte the same answer and additional records,
// the same referrals, and NODATA with a SOA for the types a name does not have.
func TestTypesMatchFile(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "db.example.org")
	if err := os.WriteFile(zone, []byte(typesZoneFile), 0o644); err != nil {
		t.Fatal(err)
	}
	hrPort, filePort := coretest.FreePort(t), coretest.FreePort(t)
	hr := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		%s
	}
}
example.org:%d {
	bind 127.0.0.1
	file %s
}`, hrPort, typesBlock, filePort, zone), hrPort, "mail.example.org")
	file := &coretest.Server{Addr: fmt.Sprintf("127.0.0.1:%d", filePort)}

	names := []string{"example.org.", "ns1", "mail", "_sip._tcp", "sip", "25.2.0.192", "legacy", "sub", "www.sub", "ns1.sub", "into", "nope"}
	qtypes := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeMX, dns.TypeTXT, dns.TypeCAA, dns.TypeSRV, dns.TypeNAPTR, dns.TypePTR, dns.TypeSPF, dns.TypeNS, dns.TypeDS}
	if answered := typesCompare(t, hr, file, "example.org.", names, qtypes); answered < 12 {
		t.Fatalf("only %d questions had answers; the comparison covers too little", answered)
	}
}

// typesCompare asks both servers every name (relative to zone unless fully
// qualified) and type, and reports any difference in rcode, authoritative bit, answer
// and additional records, and referrals' NS records; NODATA must carry a SOA. It
// returns how many questions had answers.
func typesCompare(t *testing.T, hr, file *coretest.Server, zone string, names []string, qtypes []uint16) int {
	t.Helper()
	answered := 0
	for _, n := range names {
		if !strings.HasSuffix(n, ".") {
			n += "." + zone
		}
		for _, qt := range qtypes {
			got, want := hr.Query(t, n, qt), file.Query(t, n, qt)
			what := n + " " + dns.TypeToString[qt]
			if got.Rcode != want.Rcode || got.Authoritative != want.Authoritative {
				t.Errorf("%s: healthroute %s aa=%v, file %s aa=%v", what, dns.RcodeToString[got.Rcode], got.Authoritative, dns.RcodeToString[want.Rcode], want.Authoritative)
			}
			if g, w := typesSection(t, got.Answer), typesSection(t, want.Answer); g != w {
				t.Errorf("%s: healthroute answers\n%s\nfile\n%s", what, g, w)
			}
			if g, w := typesSection(t, got.Extra), typesSection(t, want.Extra); g != w {
				t.Errorf("%s: healthroute's additional section\n%s\nfile's\n%s", what, g, w)
			}
			switch {
			case !want.Authoritative: // a referral: the same NS records
				if g, w := typesSection(t, got.Ns), typesSection(t, want.Ns); g != w {
					t.Errorf("%s: healthroute refers to\n%s\nfile to\n%s", what, g, w)
				}
			case len(want.Answer) == 0:
				if len(got.Ns) != 1 || got.Ns[0].Header().Rrtype != dns.TypeSOA {
					t.Errorf("%s: healthroute's authority section %v, want the SOA", what, got.Ns)
				}
			default:
				answered++
			}
		}
	}
	return answered
}
