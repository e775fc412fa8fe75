package healthroute

import (
	"testing"

	"github.com/coredns/caddy"
)

func TestParseAuthorityErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"soa one value", "healthroute {\nsoa ns.example.org.\n}", 2, "soa: expected MNAME RNAME [SERIAL REFRESH RETRY EXPIRE MINIMUM], got 1 values"},
		{"soa four values", "healthroute {\nsoa a. b. 1 2\n}", 2, "got 4 values"},
		{"soa bad serial", "healthroute {\nsoa a. b. x 1 1 1 1\n}", 2, "soa: invalid SERIAL 'x'"},
		{"soa bad minimum", "healthroute {\nsoa a. b. 1 1 1 1 -5\n}", 2, "soa: invalid MINIMUM '-5'"},
		{"soa bad mname", "healthroute {\nsoa a..b c.\n}", 2, "soa: invalid MNAME 'a..b'"},
		{"ns without names", "healthroute {\nns\n}", 2, "Wrong argument count"},
		{"ns bad name", "healthroute {\nns a..b\n}", 2, "ns: invalid name server 'a..b'"},
		{"in-zone ns without address", "healthroute {\nns ns1.example.org.\n}", 2, "ns: ns1.example.org. is in zone example.org. but no record gives it an address"},
	})
	// With fallthrough the next plugin may hold the name server's address.
	c := caddy.NewTestController("dns", "healthroute {\nfallthrough\nns ns1.example.org.\n}")
	c.ServerBlockKeys = []string{"example.org."}
	if _, err := parse(c, nil); err != nil {
		t.Errorf("fallthrough: %v", err)
	}
}
