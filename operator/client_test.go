package operator

import (
	"net/netip"
	"testing"
)

// TestParseClient: explain's client parameter locates the client as an ECS option
// would, an IPv4 client written as ::ffff:a.b.c.d/N included (N-96 bits of the IPv4
// address, as DNS queries are read).
func TestParseClient(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "0.0.0.0/32"},
		{"10.1.2.3", "10.1.2.3/32"},
		{"10.1.2.3/24", "10.1.2.0/24"},
		{"2001:db8::1/48", "2001:db8::/48"},
		{"::ffff:10.1.2.3", "10.1.2.3/32"},
		{"::ffff:10.1.2.3/120", "10.1.2.0/24"},
		{"::ffff:10.1.2.3/128", "10.1.2.3/32"},
		{"::ffff:10.1.2.3/80", "::/80"}, // shorter than the mapping: an IPv6 prefix
	} {
		got, err := parseClient(tc.in)
		if err != nil || !got.IsValid() || got != netip.MustParsePrefix(tc.want) {
			t.Errorf("parseClient(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"10.1.2.3/33", "300.1.1.1", "10.1.2.3/", "::ffff:10.1.2.3/129"} {
		if got, err := parseClient(bad); err == nil {
			t.Errorf("parseClient(%q) = %v, want an error", bad, got)
		}
	}
}
