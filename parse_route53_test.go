package healthroute

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

// route53Zone10k writes a hosted zone of 10,000 record sets into dir: 2,000 names,
// each with a weighted pair of A record sets behind health checks, an MX, a TXT and
// an SRV record set. It returns the record sets' and health checks' files.
func route53Zone10k(t testing.TB, dir string) (records, checks string) {
	var rs, hc strings.Builder
	rs.WriteString(`{"ResourceRecordSets":[{"Name":"example.com.","Type":"SOA","TTL":900,"ResourceRecords":[{"Value":"ns. h. 1 2 3 4 5"}]}`)
	hc.WriteString(`{"HealthChecks":[`)
	for i := range 2000 {
		for j := range 2 {
			fmt.Fprintf(&rs, `,{"Name":"n%d.example.com.","Type":"A","SetIdentifier":"s%d","Weight":%d,"TTL":60,"ResourceRecords":[{"Value":"10.%d.%d.%d"}],"HealthCheckId":"hc%d-%d"}`,
				i, j, j+1, j, i/256, i%256, i, j)
			if i+j > 0 {
				hc.WriteString(",")
			}
			fmt.Fprintf(&hc, `{"Id":"hc%d-%d","HealthCheckConfig":{"Type":"TCP","IPAddress":"10.%d.%d.%d","Port":443}}`, i, j, j, i/256, i%256)
		}
		fmt.Fprintf(&rs, `,{"Name":"n%d.example.com.","Type":"MX","TTL":300,"ResourceRecords":[{"Value":"10 mx%d.example.net."}]}`, i, i)
		fmt.Fprintf(&rs, `,{"Name":"n%d.example.com.","Type":"TXT","TTL":300,"ResourceRecords":[{"Value":"\"site %d\""}]}`, i, i)
		fmt.Fprintf(&rs, `,{"Name":"_x._tcp.n%d.example.com.","Type":"SRV","TTL":300,"ResourceRecords":[{"Value":"1 1 443 n%d.example.com."}]}`, i, i)
	}
	rs.WriteString(`]}`)
	hc.WriteString(`]}`)
	records, checks = filepath.Join(dir, "rrsets.json"), filepath.Join(dir, "checks.json")
	for p, s := range map[string]string{records: rs.String(), checks: hc.String()} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return records, checks
}

func route53Parse(t testing.TB, block string) (*blockConfig, error) {
	c := caddy.NewTestController("dns", block)
	c.ServerBlockKeys = []string{"example.com."}
	return parse(c, nil)
}

// BenchmarkRoute53Load10k loads a 10,000-record-set zone through the route53
// property: reading the JSON, converting it and parsing the result.
func BenchmarkRoute53Load10k(b *testing.B) {
	records, checks := route53Zone10k(b, b.TempDir())
	block := fmt.Sprintf("healthroute {\nroute53 {\nrecords %s\nhealth_checks %s\n}\n}", records, checks)
	b.ReportAllocs()
	for b.Loop() {
		cfg, err := route53Parse(b, block)
		if err != nil {
			b.Fatal(err)
		}
		newResolver(cfg)
	}
}

// TestRoute53LoadedAllocs answers from a 10,000-record-set zone loaded by the route53
// property without allocating, for A, TXT and MX (an out-of-zone exchange) queries.
func TestRoute53LoadedAllocs(t *testing.T) {
	records, checks := route53Zone10k(t, t.TempDir())
	cfg, err := route53Parse(t, fmt.Sprintf("healthroute {\nroute53 {\nrecords %s\nhealth_checks %s\n}\n}", records, checks))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Records) != 4*2000 || len(cfg.Checks) != 4000 {
		t.Fatalf("loaded %d record blocks and %d checks, want 8000 and 4000", len(cfg.Records), len(cfg.Checks))
	}
	r := newResolver(cfg)
	r.Publish(snapshot(cfg, "hc7-0"))
	client := netip.MustParsePrefix("192.0.2.1/32")
	for _, q := range []routing.Query{
		{Name: "n7.example.com.", Type: dns.TypeA, Client: client},
		{Name: "n7.example.com.", Type: dns.TypeTXT, Client: client},
		{Name: "n7.example.com.", Type: dns.TypeMX, Client: client},
	} {
		if a := resolveAnswer(r, q); len(a.RRs) != 1 {
			t.Fatalf("%s %s: %v, want one record", q.Name, dns.TypeToString[q.Type], a.RRs)
		}
		if n := testing.AllocsPerRun(100, func() { resolveAnswer(r, q) }); n != 0 {
			t.Errorf("%s %s: %v allocations per query, want 0", q.Name, dns.TypeToString[q.Type], n)
		}
	}
	if a := resolveAnswer(r, routing.Query{Name: "n7.example.com.", Type: dns.TypeA, Client: client}); a.RRs[0].(*dns.A).A.String() != "10.1.0.7" {
		t.Errorf("n7 with its first member's check down: %v, want the second member", a.RRs)
	}
	if a := resolveAnswer(r, routing.Query{Name: "_x._tcp.n7.example.com.", Type: dns.TypeSRV, Client: client}); len(a.Extra) != 1 {
		t.Errorf("SRV to n7: additional %v, want n7's chosen address", a.Extra)
	}
}

func TestRoute53PropertyErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"ResourceRecordSets":[{"Name":"x.example.org.","Type":"HINFO","TTL":1,"ResourceRecords":[{"Value":"a b"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	clash := filepath.Join(dir, "clash.json")
	if err := os.WriteFile(clash, []byte(`{"ResourceRecordSets":[{"Name":"a.example.org.","Type":"A","TTL":1,"ResourceRecords":[{"Value":"192.0.2.1"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	checkParseErrors(t, []parseErrorCase{
		{"no records", "healthroute {\nroute53 {\nhealth_checks x.json\n}\n}", 4, "route53: expected a block with 'records FILE'"},
		{"unknown property", "healthroute {\nroute53 {\nzone x\n}\n}", 3, "route53: unknown property 'zone'"},
		{"twice", "healthroute {\nroute53 {\nrecords a\nrecords b\n}\n}", 4, "route53: records is given twice"},
		{"bad cidr_blocks", "healthroute {\nroute53 {\nrecords a\ncidr_blocks =x\n}\n}", 4, "cidr_blocks: invalid value '=x'"},
		{"missing file", "healthroute {\nroute53 {\nrecords " + filepath.Join(dir, "none.json") + "\n}\n}", 2, "route53: open " + filepath.Join(dir, "none.json")},
		{"record set refused", "healthroute {\nroute53 {\nrecords " + bad + "\n}\n}", 2, "route53: " + bad + `: record set x.example.org. HINFO: type "HINFO": not supported`},
		{"property given twice", "healthroute {\nroute53 {\nrecords " + bad + "\n}\nroute53 {\nrecords " + bad + "\n}\n}", 5, "route53 is given twice"},
	})
	// A record of the zone that the block defines too is refused, naming the
	// converted file.
	_, err := route53Parse(t, "healthroute example.org {\nrecord a.example.org. simple {\nA 192.0.2.2\n}\nroute53 {\nrecords "+clash+"\n}\n}")
	if err == nil || !strings.Contains(err.Error(), clash+" (converted)") || !strings.Contains(err.Error(), "record a.example.org.: defined twice for A") {
		t.Errorf("a record defined in the block and the zone: %v", err)
	}
}

// TestRoute53ReadmeProperty checks docs/route53.md's route53 property example: it answers
// every name and type as the printed lines of the import example above it do.
func TestRoute53ReadmeProperty(t *testing.T) {
	b, err := os.ReadFile("docs/route53.md")
	if err != nil {
		t.Fatal(err)
	}
	var property, printed string
	for _, blk := range regexp.MustCompile("(?s)~~~ corefile\n(.*?)~~~").FindAllStringSubmatch(string(b), -1) {
		m := regexp.MustCompile(`(?s)\n    (healthroute .*?\n    })\n`).FindStringSubmatch(blk[1])
		switch {
		case m == nil:
		case strings.Contains(m[1], "route53 {"):
			property = m[1]
		case strings.Contains(m[1], "Portland data center"):
			printed = m[1]
		}
	}
	if property == "" || printed == "" {
		t.Fatal("docs/route53.md lacks the route53 property example or the import's printed lines")
	}
	rp, pcfg := testResolver(t, property)
	rh, hcfg := testResolver(t, printed)
	rp.Publish(snapshot(pcfg))
	rh.Publish(snapshot(hcfg))
	for _, n := range []string{"example.com.", "api.example.com.", "cdn.example.com.", "www.example.com."} {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT} {
			q := routing.Query{Name: n, Type: qt, Client: testClient}
			if g, w := route53Answer(resolveAnswer(rp, q)), route53Answer(resolveAnswer(rh, q)); g != w {
				t.Errorf("%s %s: the property answers\n%s\nthe printed lines\n%s", n, dns.TypeToString[qt], g, w)
			}
		}
	}
}

// TestRoute53Watch checks the watcher at the period users get (2 s, fake time): no
// reload while the files stay as parse read them; one when the record sets' file
// changes; a reload that could not start (another one running) is tried again at the
// next check; a later change of the health checks' file reloads again.
func TestRoute53Watch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		r := &route53Config{files: route53.Files{Records: filepath.Join(dir, "r.json"), HealthChecks: filepath.Join(dir, "c.json")}}
		for _, p := range r.files.Paths() {
			if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r.stats = watch.Stamps(r.files.Paths())
		var calls, started atomic.Int32
		var busy atomic.Bool
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			watchRoute53(ctx, r, latencyTablePeriod, func() bool {
				calls.Add(1)
				if busy.Load() {
					return false
				}
				started.Add(1)
				return true
			})
		}()
		wait := func(d time.Duration) { time.Sleep(d); synctest.Wait() } // fake time
		wait(3 * latencyTablePeriod)
		if calls.Load() != 0 {
			t.Fatalf("%d reloads with the files unchanged", calls.Load())
		}
		busy.Store(true)
		if err := os.WriteFile(r.files.Records, []byte(`{"ResourceRecordSets": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
		wait(latencyTablePeriod)
		if calls.Load() != 1 || started.Load() != 0 {
			t.Fatalf("after a change with a reload running: %d calls, %d started; want 1 and 0", calls.Load(), started.Load())
		}
		busy.Store(false)
		wait(latencyTablePeriod)
		wait(2 * latencyTablePeriod)
		if calls.Load() != 2 || started.Load() != 1 {
			t.Fatalf("after the running reload ended: %d calls, %d started; want 2 and 1 (one retry, then quiet)", calls.Load(), started.Load())
		}
		if err := os.WriteFile(r.files.HealthChecks, []byte(`{"HealthChecks": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
		wait(latencyTablePeriod)
		if started.Load() != 2 {
			t.Fatalf("after the health checks' file changed: %d reloads started, want 2", started.Load())
		}
		cancel()
		<-done
	})
}

// A watcher's reload waits while another reload runs, whatever started it, and
// restarts nothing when no instance runs; either way the watcher offers the change
// again at its next check.
func TestRoute53ReloadWaitsForRunningReload(t *testing.T) {
	reg := &registry{}
	looked := 0
	current := func() *caddy.Instance { looked++; return nil }
	reg.beginReload()
	if reloadThrough(reg, current, (*caddy.Instance).Caddyfile) || looked != 0 {
		t.Fatalf("started a reload (looked up %d instances) while another ran", looked)
	}
	reg.abortReload()
	if reloadThrough(reg, current, (*caddy.Instance).Caddyfile) || looked != 1 {
		t.Fatalf("with no instance running: started a reload, or looked up %d instances; want 1 look, no reload", looked)
	}
	if shared.restarting.Load() {
		t.Fatal("the refused reload left the restarting flag set")
	}
}
