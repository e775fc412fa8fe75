package test

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// geoipTestDB returns CoreDNS's own GeoIP test database: 81.2.69.142 is in
// Cambridge, GB (EU), subdivisions ENG,CAM, at 52.2242, 0.1315.
func geoipTestDB(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coredns/coredns").Output()
	if err != nil {
		t.Fatalf("locating the coredns module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "plugin", "geoip", "testdata", "GeoLite2-City.mmdb")
}

// queryECS sends name/A with an ECS option (or none when prefix is "") and returns
// the reply's first A value and its echoed ECS option.
func queryECS(t *testing.T, addr, name, prefix string) (string, *dns.EDNS0_SUBNET, *dns.Msg) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	if prefix != "" {
		ip, n, err := net.ParseCIDR(prefix)
		if err != nil {
			t.Fatal(err)
		}
		ones, _ := n.Mask.Size()
		fam, a := uint16(1), ip.To4()
		if a == nil {
			fam, a = 2, ip
		}
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: fam, SourceNetmask: uint8(ones), Address: a})
	}
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s with ECS %q: %v", name, prefix, err)
	}
	var ecs *dns.EDNS0_SUBNET
	if o := r.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			if e, ok := opt.(*dns.EDNS0_SUBNET); ok {
				ecs = e
			}
		}
	}
	return firstA(r), ecs, r
}

// TestEndToEndClientAware drives geolocation, latency, geoproximity and IP-based
// answers through the real server, with the geoip plugin (CoreDNS's own test
// database) placed before healthroute and ECS queries from different subnets.
func TestEndToEndClientAware(t *testing.T) {
	port := coretest.FreePort(t)
	table := coretest.WriteFile(t, "latency.csv", "198.51.100.0/24,us-east-1,5\n198.51.100.0/24,eu-west-2,90\n")
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	metadata
	geoip %s {
		edns-subnet
	}
	healthroute {
		latency_table %s
		region us-east-1 38.9 -77.0
		region eu-west-2 51.5 -0.12
		record geo.example.org. geolocation {
			subdivision GB-ENG A 192.0.2.1
			continent EU A 192.0.2.2
			default A 192.0.2.9
		}
		record lat.example.org. latency {
			region us-east-1 A 198.51.100.1
			region eu-west-2 A 198.51.100.2
		}
		record prox.example.org. geoproximity {
			coordinates 40.7 -74.0 A 203.0.113.1
			coordinates 52.2 0.1 A 203.0.113.2
		}
		record ip.example.org. ip {
			cidr 81.2.69.0/24 A 192.0.2.50
			default A 192.0.2.59
		}
		record www.example.org. weighted {
			weight 1 A 192.0.2.100
		}
	}
}`, port, geoipTestDB(t), table)
	srv := coretest.Start(t, corefile, port, "www.example.org")
	tests := []struct {
		name, qname, ecs, want string
		wantScope              int // -1: no ECS echoed
	}{
		{"geolocation: subdivision of the GeoIP address", "geo.example.org.", "81.2.69.142/32", "192.0.2.1", 32},
		{"geolocation: address unknown to GeoIP -> default", "geo.example.org.", "198.51.100.7/32", "192.0.2.9", 32},
		{"geolocation: no ECS, source 127.0.0.1 -> default", "geo.example.org.", "", "192.0.2.9", -1},
		{"latency: by distance from GeoIP coordinates", "lat.example.org.", "81.2.69.142/32", "198.51.100.2", 32},
		{"latency: by the table row for the ECS prefix", "lat.example.org.", "198.51.100.0/24", "198.51.100.1", 24},
		{"geoproximity: nearest to Cambridge", "prox.example.org.", "81.2.69.142/32", "203.0.113.2", 32},
		{"geoproximity: unknown location -> first listed", "prox.example.org.", "198.51.100.7/32", "203.0.113.1", 32},
		{"ip: ECS /24 matches", "ip.example.org.", "81.2.69.0/24", "192.0.2.50", 24},
		{"ip: ECS /16 is too short for a /24 block", "ip.example.org.", "81.2.0.0/16", "192.0.2.59", 24}, // RFC 7871 7.2.1: the /24 inside decides
		{"ip: IPv6 ECS -> default", "ip.example.org.", "2001:db8::/56", "192.0.2.59", 0},                 // no IPv6 block: the default for every IPv6 client
		{"weighted: scope 0", "www.example.org.", "81.2.69.0/24", "192.0.2.100", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ecs, r := queryECS(t, srv.Addr, tc.qname, tc.ecs)
			if got != tc.want {
				t.Errorf("answer %s, want %s\n%v", got, tc.want, r)
			}
			switch {
			case tc.wantScope < 0 && ecs != nil:
				t.Errorf("ECS echoed %v for a query without one", ecs)
			case tc.wantScope >= 0 && (ecs == nil || int(ecs.SourceScope) != tc.wantScope):
				t.Errorf("echoed ECS %v, want scope %d", ecs, tc.wantScope)
			}
		})
	}

	// A malformed ECS option (source prefix longer than the address) gets FORMERR, and
	// the server keeps answering.
	bad := new(dns.Msg)
	bad.SetQuestion("geo.example.org.", dns.TypeA)
	bad.SetEdns0(1232, false)
	bad.IsEdns0().Option = append(bad.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, SourceScope: 24, Address: net.ParseIP("81.2.69.0").To4()})
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(bad, srv.Addr)
	if err != nil || r.Rcode != dns.RcodeFormatError {
		t.Errorf("ECS with a nonzero scope in the query: want FORMERR, got %v (%v)", r, err)
	}
	if got, _, _ := queryECS(t, srv.Addr, "www.example.org.", ""); got != "192.0.2.100" {
		t.Errorf("after the malformed query the server answers %q", got)
	}
}
