package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// route53Records is a hosted zone as aws route53 list-resource-record-sets prints it,
// with one HTTP health check on a loopback endpoint (CHECK_PORT).
const route53Records = `{"ResourceRecordSets": [
	{"Name": "example.com.", "Type": "SOA", "TTL": 900, "ResourceRecords": [{"Value": "ns-1.awsdns-1.com. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}]},
	{"Name": "api.example.com.", "Type": "A", "SetIdentifier": "live", "Failover": "PRIMARY", "AliasTarget": {"HostedZoneId": "Z1", "DNSName": "www.example.com.", "EvaluateTargetHealth": true}},
	{"Name": "api.example.com.", "Type": "A", "SetIdentifier": "standby", "Failover": "SECONDARY", "TTL": 60, "ResourceRecords": [{"Value": "198.51.100.20"}]},
	{"Name": "\\052.apps.example.com.", "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.60"}]},
	{"Name": "cdn.example.com.", "Type": "A", "AliasTarget": {"HostedZoneId": "Z2FDTNDATAQYW2", "DNSName": "d123rk29d0stfj.cloudfront.net.", "EvaluateTargetHealth": false}},
	{"Name": "dual.example.com.", "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.70"}]},
	{"Name": "dual.example.com.", "Type": "AAAA", "TTL": 60, "ResourceRecords": [{"Value": "2001:db8::70"}]},
	{"Name": "geo.example.com.", "Type": "A", "SetIdentifier": "eu", "GeoLocation": {"ContinentCode": "EU"}, "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.80"}]},
	{"Name": "geo.example.com.", "Type": "A", "SetIdentifier": "rest", "GeoLocation": {"CountryCode": "*"}, "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.81"}]},
	{"Name": "mv.example.com.", "Type": "A", "SetIdentifier": "1", "MultiValueAnswer": true, "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.91"}], "HealthCheckId": "web"},
	{"Name": "mv.example.com.", "Type": "A", "SetIdentifier": "2", "MultiValueAnswer": true, "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.92"}]},
	{"Name": "office.example.com.", "Type": "A", "SetIdentifier": "lab", "CidrRoutingConfig": {"CollectionId": "c1", "LocationName": "lab"}, "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.30"}]},
	{"Name": "office.example.com.", "Type": "A", "SetIdentifier": "others", "CidrRoutingConfig": {"CollectionId": "c1", "LocationName": "*"}, "TTL": 60, "ResourceRecords": [{"Value": "198.51.100.30"}]},
	{"Name": "pool.example.com.", "Type": "A", "SetIdentifier": "on", "Weight": 1, "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.20"}]},
	{"Name": "pool.example.com.", "Type": "A", "SetIdentifier": "off", "Weight": 0, "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.21"}]},
	{"Name": "www.example.com.", "Type": "A", "SetIdentifier": "primary", "Failover": "PRIMARY", "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.10"}], "HealthCheckId": "web"},
	{"Name": "www.example.com.", "Type": "A", "SetIdentifier": "secondary", "Failover": "SECONDARY", "TTL": 60, "ResourceRecords": [{"Value": "198.51.100.10"}]}
]}`

// route53Checks is the health check, as aws route53 list-health-checks prints it:
// Route 53's fast interval and a threshold of one, so a failure shows within 10 s.
const route53Checks = `{"HealthChecks": [{"Id": "web", "CallerReference": "r", "HealthCheckConfig":
	{"IPAddress": "127.0.0.1", "Port": CHECK_PORT, "Type": "HTTP", "ResourcePath": "/health", "RequestInterval": 10, "FailureThreshold": 1}}]}`

// route53Handwritten is the same zone written by hand.
const route53Handwritten = `
		check web http http://127.0.0.1:CHECK_PORT/health {
			interval 10s
			failure_threshold 1
		}
		record www.example.com. failover {
			primary   A 192.0.2.10 check web
			secondary A 198.51.100.10
		}
		record api.example.com. failover {
			primary   alias www.example.com.
			secondary A 198.51.100.20
		}
		record pool.example.com. weighted {
			weight 1 A 192.0.2.20
			weight 0 A 192.0.2.21
		}
		record cdn.example.com. simple {
			CNAME d123rk29d0stfj.cloudfront.net.
		}
		record office.example.com. ip {
			cidr 127.0.0.0/8 A 192.0.2.30
			default A 198.51.100.30
		}
		record geo.example.com. geolocation {
			continent EU A 192.0.2.80
			default A 192.0.2.81
		}
		record mv.example.com. multivalue {
			value A 192.0.2.91 check web
			value A 192.0.2.92
		}
		record dual.example.com. simple {
			A 192.0.2.70
			AAAA 2001:db8::70
		}
		record *.apps.example.com. simple {
			A 192.0.2.60
		}`

// route53ImportCommand builds cmd/healthroute-import into dir.
func route53ImportCommand(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "healthroute-import")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/healthroute-import")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/healthroute-import: %v\n%s", err, out)
	}
	return bin
}

// route53Answers renders the answers of every name and type the zone has, for
// comparing two servers.
func route53Answers(t *testing.T, s *coretest.Server) string {
	t.Helper()
	var b strings.Builder
	for _, n := range []string{"www", "api", "pool", "cdn", "office", "geo", "mv", "dual", "x.apps", "nope"} {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
			r := s.Query(t, n+".example.com.", qt)
			rrs := make([]string, len(r.Answer))
			for i, rr := range r.Answer {
				rrs[i] = rr.String()
			}
			slices.Sort(rrs)
			fmt.Fprintf(&b, "%s %s: %s aa=%v %s\n", n, dns.TypeToString[qt], dns.RcodeToString[r.Rcode], r.Authoritative, strings.Join(rrs, " | "))
		}
	}
	return b.String()
}

// TestRoute53ImportServes runs healthroute-import on a zone's JSON, loads its output
// into the real CoreDNS with the import directive, and checks that every name and
// type answers as a server with the hand-written Corefile does: with the health
// check passing, and after it fails.
func TestRoute53ImportServes(t *testing.T) {
	var down atomic.Bool
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	}))
	t.Cleanup(endpoint.Close)
	u, err := url.Parse(endpoint.URL)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "CHECK_PORT", u.Port())), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	records, checks := write("rrsets.json", route53Records), write("checks.json", route53Checks)
	cidr := write("blocks.json", `{"CidrBlocks": [{"CidrBlock": "127.0.0.0/8", "LocationName": "lab"}]}`)

	bin := route53ImportCommand(t, dir)
	out, err := exec.Command(bin, "-records", records, "-checks", checks, "-cidr", "c1="+cidr).Output()
	if err != nil {
		t.Fatalf("healthroute-import: %v", err)
	}
	conf := write("route53.conf", string(out))

	server := func(body string) *coretest.Server {
		port := coretest.FreePort(t)
		return coretest.Start(t, fmt.Sprintf("example.com:%d {\n\tbind 127.0.0.1\n\thealthroute example.com {\n%s\n\t}\n}\n", port, body), port, "www.example.com")
	}
	imported := server("\t\timport " + conf)
	hand := server(strings.ReplaceAll(route53Handwritten, "CHECK_PORT", u.Port()))
	loaded := server(fmt.Sprintf("\t\troute53 {\n\t\t\trecords %s\n\t\t\thealth_checks %s\n\t\t\tcidr_blocks c1=%s\n\t\t}", records, checks, cidr))

	if got, want := route53Answers(t, imported), route53Answers(t, hand); got != want {
		t.Fatalf("check passing: imported zone answers\n%s\nhand-written Corefile\n%s", got, want)
	}
	if got, want := route53Answers(t, loaded), route53Answers(t, hand); got != want {
		t.Fatalf("check passing: zone loaded by the route53 property answers\n%s\nhand-written Corefile\n%s", got, want)
	}
	if got := imported.Query(t, "www.example.com.", dns.TypeA); len(got.Answer) != 1 || !strings.HasSuffix(got.Answer[0].String(), "192.0.2.10") {
		t.Fatalf("www with the check passing: %v, want the primary 192.0.2.10", got.Answer)
	}

	down.Store(true)
	failed := func(m *dns.Msg) bool {
		return len(m.Answer) == 1 && strings.HasSuffix(m.Answer[0].String(), "198.51.100.10")
	}
	// A 10 s interval (Route 53's fast one) whose first probe comes within one
	// interval: each server fails over within two intervals.
	imported.WaitFor(t, "www.example.com.", dns.TypeA, 25*time.Second, "imported zone fails over", failed)
	hand.WaitFor(t, "www.example.com.", dns.TypeA, 25*time.Second, "hand-written zone fails over", failed)
	loaded.WaitFor(t, "www.example.com.", dns.TypeA, 25*time.Second, "zone loaded by the route53 property fails over", failed)
	if got, want := route53Answers(t, imported), route53Answers(t, hand); got != want {
		t.Errorf("check failing: imported zone answers\n%s\nhand-written Corefile\n%s", got, want)
	}
	if got, want := route53Answers(t, loaded), route53Answers(t, hand); got != want {
		t.Errorf("check failing: zone loaded by the route53 property answers\n%s\nhand-written Corefile\n%s", got, want)
	}
}

// TestRoute53PropertyReloads serves a zone with the route53 property, changes the
// record sets' file and waits for the new answer (the file is polled every 2 s); then
// breaks the file, waits for the failed reload in the log, and checks that the
// previous zone keeps answering; then fixes it again.
func TestRoute53PropertyReloads(t *testing.T) {
	dir := t.TempDir()
	records := filepath.Join(dir, "rrsets.json")
	zone := func(addr, txt string) string {
		return `{"ResourceRecordSets": [
	{"Name": "example.com.", "Type": "SOA", "TTL": 900, "ResourceRecords": [{"Value": "ns-1.awsdns-1.com. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}]},
	{"Name": "www.example.com.", "Type": "A", "TTL": 30, "ResourceRecords": [{"Value": "` + addr + `"}]},
	{"Name": "www.example.com.", "Type": "TXT", "TTL": 300, "ResourceRecords": [{"Value": "\"` + txt + `\""}]},
	{"Name": "example.com.", "Type": "MX", "TTL": 300, "ResourceRecords": [{"Value": "10 www.example.com."}]}
]}`
	}
	write := func(content string) {
		// Written aside and renamed, so that a poll never reads half a file.
		tmp := records + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, records); err != nil {
			t.Fatal(err)
		}
	}
	write(zone("192.0.2.1", "one"))
	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf("example.com:%d {\n\tbind 127.0.0.1\n\thealthroute {\n\t\troute53 {\n\t\t\trecords %s\n\t\t}\n\t}\n}\n", port, records), port, "www.example.com")
	has := func(want ...string) func(*dns.Msg) bool {
		return func(m *dns.Msg) bool {
			var got []string
			for _, rr := range append(m.Answer, m.Extra...) {
				got = append(got, rr.String())
			}
			return slices.Equal(got, want)
		}
	}
	s.WaitFor(t, "www.example.com.", dns.TypeA, time.Second, "the zone's A record with its TTL", has("www.example.com.\t30\tIN\tA\t192.0.2.1"))
	s.WaitFor(t, "www.example.com.", dns.TypeTXT, time.Second, "the zone's TXT record", has("www.example.com.\t300\tIN\tTXT\t\"one\""))
	s.WaitFor(t, "example.com.", dns.TypeMX, time.Second, "the MX with its target's address", has("example.com.\t300\tIN\tMX\t10 www.example.com.", "www.example.com.\t30\tIN\tA\t192.0.2.1"))

	write(zone("192.0.2.2", "two"))
	s.WaitFor(t, "www.example.com.", dns.TypeA, 20*time.Second, "the changed file's A record", has("www.example.com.\t30\tIN\tA\t192.0.2.2"))
	s.WaitFor(t, "www.example.com.", dns.TypeTXT, time.Second, "the changed file's TXT record", has("www.example.com.\t300\tIN\tTXT\t\"two\""))

	write(strings.Replace(zone("192.0.2.3", "three"), `"Type": "A"`, `"Type": "HINFO"`, 1))
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.Output(), "keeping the previous configuration") {
		if time.Now().After(deadline) {
			t.Fatalf("no failed reload logged within 20s:\n%s", s.Output())
		}
		s.WaitFor(t, "www.example.com.", dns.TypeA, time.Second, "the previous zone while the file is broken", has("www.example.com.\t30\tIN\tA\t192.0.2.2"))
	}
	if out := s.Output(); !strings.Contains(out, `record set www.example.com. HINFO`) || !strings.Contains(out, records) {
		t.Errorf("the failed reload's log does not name the record set and the file:\n%s", out)
	}
	s.WaitFor(t, "www.example.com.", dns.TypeA, time.Second, "the previous zone after the failed reload", has("www.example.com.\t30\tIN\tA\t192.0.2.2"))

	write(zone("192.0.2.4", "four"))
	s.WaitFor(t, "www.example.com.", dns.TypeA, 20*time.Second, "the fixed file's A record", has("www.example.com.\t30\tIN\tA\t192.0.2.4"))
}
