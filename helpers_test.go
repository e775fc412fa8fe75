package healthroute

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/routing"
)

// mustParse parses a healthroute block (zone example.org. unless the block names one).
func mustParse(t testing.TB, block string) *blockConfig {
	t.Helper()
	c := caddy.NewTestController("dns", block)
	c.ServerBlockKeys = []string{"example.org."}
	cfg, err := parse(c, nil)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, block)
	}
	return cfg
}

// testResolver builds a Resolver for block with a seeded random source.
func testResolver(t testing.TB, block string) (*routing.Resolver, *blockConfig) {
	t.Helper()
	cfg := mustParse(t, block)
	r := newResolver(cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	r.Rand = rng.Uint64N
	return r, cfg
}

// snapshot returns a health view in which the named checks have failed their
// threshold window and every other probed check has passed.
func snapshot(cfg *blockConfig, down ...string) *health.Snapshot {
	states := map[string]health.Status{}
	for _, s := range cfg.Checks {
		states[s.Fingerprint()] = health.Status{Seen: true}
	}
	for _, n := range down {
		states[cfg.Checks[n].Fingerprint()] = health.Status{Down: true, Seen: true}
	}
	return health.NewSnapshot(1, states)
}

var testClient = netip.MustParsePrefix("192.0.2.1/32")

// values resolves name/qtype and returns the answer's values, sorted, joined by ",".
func values(r *routing.Resolver, name string, qtype uint16) string {
	return strings.Join(rrValues(resolveAnswer(r, routing.Query{Name: name, Type: qtype, Client: testClient}).RRs), ",")
}

func rrValues(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		case *dns.CNAME:
			out = append(out, v.Target)
		default:
			out = append(out, rr.String())
		}
	}
	sort.Strings(out)
	return out
}

// shares resolves name n times and returns how often each answer came back.
func shares(r *routing.Resolver, name string, qtype uint16, n int) map[string]int {
	got := map[string]int{}
	for range n {
		got[values(r, name, qtype)]++
	}
	return got
}

// parseErrorCase is a Corefile parse must refuse, with the line and the words the
// error must carry.
type parseErrorCase struct {
	name  string
	input string
	line  int
	want  string
}

// checkParseErrors asserts that each input is refused with "Testfile:LINE - Error
// during parsing" and the wanted words.
func checkParseErrors(t *testing.T, tests []parseErrorCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			c.ServerBlockKeys = []string{"example.org."}
			_, err := parse(c, nil)
			if err == nil {
				t.Fatalf("parse accepted:\n%s", tc.input)
			}
			loc := fmt.Sprintf("Testfile:%d - Error during parsing", tc.line)
			if !strings.Contains(err.Error(), loc) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q and %q", err, loc, tc.want)
			}
		})
	}
}

// resolveAnswer answers q from r's current table, as the handler does.
func resolveAnswer(r *routing.Resolver, q routing.Query) routing.Answer {
	var ans routing.Answer
	r.ResolveInto(&q, &ans)
	return ans
}
