package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestMetricsZoneChangeReload reloads the real binary (SIGUSR1) into a
// Corefile whose healthroute block gains a zone: every scrape must parse (no
// answers_total series twice) and the kept member's series must continue from its
// count before the reload (the new block has a zone in common with the old one).
func TestMetricsZoneChangeReload(t *testing.T) {
	port, mport := coretest.FreePort(t), coretest.FreePort(t)
	corefile := func(zones, records string) string {
		return fmt.Sprintf(`.:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute %s {
		record keep.example.org. weighted {
			weight 10 A 192.0.2.1 id kept
		}
		%s
	}
}
`, port, mport, zones, records)
	}
	srv := coretest.Start(t, corefile("example.org", ""), port, "keep.example.org")
	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	kept := map[string]string{"zone": "example.org.", "record": "keep.example.org.", "member": "kept"}
	read := func() float64 {
		fams, _ := scrape(t, murl) // fails the test on a scrape the registry refused
		return metricValue(fams, metricPrefix+"answers_total", kept)
	}
	before := read() // Start's own readiness queries count too
	for range 3 {
		srv.Query(t, "keep.example.org", dns.TypeA)
	}
	if v := read(); v != before+3 {
		t.Fatalf("answers_total{member=kept} = %v, want %v", v, before+3)
	}

	srv.Reload(t, corefile("example.org example.net", `record new.example.net. simple {
			A 192.0.2.3 id fresh
		}`))
	srv.WaitFor(t, "new.example.net", dns.TypeA, 15*time.Second, "the reloaded Corefile serves",
		func(m *dns.Msg) bool { return firstA(m) == "192.0.2.3" })
	for range 2 {
		srv.Query(t, "keep.example.org", dns.TypeA)
	}
	if v := read(); v != before+5 {
		t.Fatalf("answers_total{member=kept} after the zone-changing reload = %v, want %v\n%s", v, before+5, srv.Output())
	}
}
