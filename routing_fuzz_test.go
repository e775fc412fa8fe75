package healthroute

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// FuzzParseResolve parses arbitrary Corefile text as a healthroute block and, when it
// parses, builds the Resolver and asks it about its zones' apices and every name it
// defines (up to 20), healthy and
// with every check down, directly and through explain. Nothing may panic, and every
// answer is owned by the name asked. Seeds: testdata/fuzz/FuzzParseResolve.
func FuzzParseResolve(f *testing.F) {
	f.Add("healthroute {\nrecord www.example.org. simple {\nA 192.0.2.1\n}\n}")
	f.Fuzz(func(t *testing.T, input string) {
		for _, special := range []string{"/dev", "/proc", "/sys"} {
			if strings.Contains(input, special) {
				t.Skip("reads a special file") // a file option naming /dev/stdin could block
			}
		}
		c := caddy.NewTestController("dns", input)
		c.ServerBlockKeys = []string{"example.org."}
		cfg, err := parse(c, nil)
		if err != nil {
			if !strings.Contains(err.Error(), "Testfile:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		r := newResolver(cfg)
		names := slices.Clone(cfg.Zones) // the apices: SOA and NS
		for _, rs := range cfg.Records[:min(len(cfg.Records), 20)] {
			names = append(names, strings.Replace(rs.Name, "*", "x", 1))
		}
		ask := func() {
			for _, name := range names {
				for _, client := range fuzzClients {
					for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT, dns.TypeSOA, dns.TypeNS} {
						q := routing.Query{Name: name, Type: qt, Client: client.prefix, Loc: client.loc}
						for _, ans := range []routing.Answer{resolveAnswer(r, q), fuzzExplain(r, q)} {
							if len(ans.RRs) > 0 && ans.RRs[0].Header().Name != name {
								t.Fatalf("%s %s: answer owned by %s", name, dns.TypeToString[qt], ans.RRs[0].Header().Name)
							}
						}
					}
				}
			}
		}
		ask()
		var down []string
		for n := range cfg.Checks {
			down = append(down, n)
		}
		r.Publish(snapshot(cfg, down...))
		ask()
	})
}

func fuzzExplain(r *routing.Resolver, q routing.Query) routing.Answer {
	ans, _ := r.Explain(q)
	return ans
}

// fuzzClients are the clients FuzzParseResolve asks as: with and without a location,
// IPv4 and IPv6, a full address and an ECS prefix.
var fuzzClients = []struct {
	prefix netip.Prefix
	loc    routing.ClientLocation
}{
	{netip.MustParsePrefix("192.0.2.1/32"), routing.ClientLocation{}},
	{netip.MustParsePrefix("198.51.100.0/24"), routing.ClientLocation{Country: "DE", Continent: "EU", Lat: 52.5, Lon: 13.4, HasCoords: true}},
	{netip.MustParsePrefix("2001:db8::/48"), routing.ClientLocation{Country: "US", Subdivisions: "CA", Lat: 37.7, Lon: -122.4, HasCoords: true}},
}

// FuzzLatencyTable reads arbitrary latency_table text. A refused table names the file
// and line; an accepted one holds, for every client, a row of every region with each
// latency in range or unknown. Seeds: testdata/fuzz/FuzzLatencyTable.
func FuzzLatencyTable(f *testing.F) {
	f.Add([]byte("client_cidr,region,milliseconds\n192.0.2.0/24,us-east-1,10\n"))
	ids := map[string]int{"us-east-1": 0, "eu-west-1": 1}
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := routing.ReadLatencyTable(bytes.NewReader(data), "fuzz.csv", ids)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, c := range fuzzClients {
			row, ok := tab.Rows.Lookup(c.prefix)
			if !ok {
				continue
			}
			if len(row) != len(ids) {
				t.Fatalf("row of %d regions, want %d", len(row), len(ids))
			}
			for _, us := range row {
				if us != routing.UnknownLatency && us > routing.MaxLatencyMs*1000 {
					t.Fatalf("latency %d us out of range", us)
				}
			}
		}
	})
}
