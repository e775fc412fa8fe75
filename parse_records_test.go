package healthroute

import (
	"testing"
)

func TestTypesParseErrors(t *testing.T) {
	rec := func(body string) string {
		return "healthroute {\nrecord a.example.org. simple {\n" + body + "\n}\n}"
	}
	checkParseErrors(t, []parseErrorCase{
		{"bad MX", rec("MX ten mail.example.org."), 3, "invalid MX value 'ten mail.example.org.'"},
		{"short SRV", rec("SRV 10 5 443"), 3, "SRV value '10 5 443' has too few fields, expected 4"},
		{"comment in a field", rec("MX 10 a;b.example.org."), 3, "field 'a;b.example.org.' is not one presentation field"},
		{"blank in a field", rec(`MX 10 "a b."`), 3, "field 'a b.' is not one presentation field"},
		{"SRV cut by an option", rec("SRV 10 5 443 id x"), 3, "has too few fields"},
		{"bad CAA", rec(`CAA x issue "ca.example.net"`), 3, "invalid CAA value 'x issue \"ca.example.net\"'"},
		{"bad DS", rec("DS 1 2 x ABCD"), 3, "invalid DS value '1 2 x ABCD'"},
		{"no values", rec("MX check c"), 3, "MX needs at least one value"},
		{"unknown type", "healthroute {\nrecord a.example.org. weighted {\nweight 1 HINFO a b\n}\n}", 3, "unknown target type 'HINFO'"},
		{"ttl twice", rec("ttl 1\nttl 2\nA 192.0.2.1"), 4, "ttl is given twice"},
		{"bad ttl", rec("ttl -1\nA 192.0.2.1"), 3, "ttl: invalid value '-1'"},
		{"alias type", "healthroute {\nrecord a.example.org. simple {\nalias b.example.org. NS\n}\nrecord b.example.org. simple {\nA 192.0.2.1\n}\n}", 3, "alias: invalid type 'NS'"},
		{"alias type not served", "healthroute {\nrecord a.example.org. simple {\nalias b.example.org. AAAA\n}\nrecord b.example.org. simple {\nA 192.0.2.1\n}\n}", 3, "serves no AAAA records"},
		{"multivalue NS", "healthroute {\nrecord a.example.org. multivalue {\nvalue NS ns.example.net.\n}\n}", 3, "not NS"},
		{"CNAME and MX", "healthroute {\nrecord a.example.org. simple {\nCNAME b.example.net.\n}\nrecord a.example.org. simple {\nMX 1 b.example.net.\n}\n}", 2, "CNAME and MX at one name"},
		{"alias to a delegation", "healthroute {\nrecord a.example.org. simple {\nalias b.example.org.\n}\nrecord b.example.org. simple {\nNS ns.example.net.\n}\n}", 3, "alias target 'b.example.org.' serves no records"},
		{"NS at the apex", "healthroute {\nrecord example.org. simple {\nNS ns.example.net.\n}\n}", 3, "NS at the zone apex"},
		{"same type in two blocks", "healthroute {\nrecord a.example.org. simple {\nTXT x\n}\nrecord a.example.org. weighted {\nweight 1 TXT y\n}\n}", 5, "defined twice for TXT (first at line 2"},
	})
}
