package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestMetricsThroughReload reloads the real binary (SIGUSR1) between answers and
// scrapes its prometheus endpoint: the answers_total series of a member the new
// Corefile keeps continues from its count before the reload, the series of a record
// the new Corefile dropped is gone, and every scrape parses (no series twice).
func TestMetricsThroughReload(t *testing.T) {
	port, mport := coretest.FreePort(t), coretest.FreePort(t)
	corefile := func(records string) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		record keep.example.org. weighted {
			weight 10 A 192.0.2.1 id kept
		}
		%s
	}
}
`, port, mport, records)
	}
	// Weighted, not simple: only record sets whose answer can change have series.
	srv := coretest.Start(t, corefile(`record gone.example.org. weighted {
			weight 10 A 192.0.2.2 id dropped
		}`), port, "keep.example.org")
	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	kept := map[string]string{"record": "keep.example.org.", "member": "kept"}
	gone := map[string]string{"record": "gone.example.org."}
	read := func(labels map[string]string) float64 {
		fams, _ := scrape(t, murl)
		return metricValue(fams, metricPrefix+"answers_total", labels)
	}
	dump := func() string {
		fams, _ := scrape(t, murl)
		return series(fams, metricPrefix+"answers_total") + "\n" + srv.Output()
	}
	is := func(want string) func(*dns.Msg) bool { return func(m *dns.Msg) bool { return firstA(m) == want } }
	before := read(kept) // Start's own readiness queries count too
	for range 3 {
		srv.Query(t, "keep.example.org", dns.TypeA)
	}
	srv.Query(t, "gone.example.org", dns.TypeA)
	if v := read(kept); v != before+3 {
		t.Fatalf("answers_total{member=kept} = %v, want %v\n%s", v, before+3, dump())
	}
	if v := read(gone); v != 1 {
		t.Fatalf("answers_total{record=gone} = %v, want 1\n%s", v, dump())
	}

	srv.Reload(t, corefile(`record new.example.org. weighted {
			weight 10 A 192.0.2.3 id fresh
		}`))
	srv.WaitFor(t, "new.example.org", dns.TypeA, 15*time.Second, "the reloaded Corefile serves", is("192.0.2.3"))
	for range 2 {
		srv.Query(t, "keep.example.org", dns.TypeA)
	}
	// The old instance shuts down after the new one started; its dropped record's
	// series goes with it.
	waitUntil(t, 10*time.Second, "the dropped record's series is gone", func() bool { return read(gone) == 0 }, dump)
	if v := read(kept); v != before+5 {
		t.Fatalf("answers_total{member=kept} after the reload = %v, want %v: the series did not continue\n%s", v, before+5, dump())
	}
	if v := read(map[string]string{"record": "new.example.org.", "member": "fresh"}); v != 1 {
		t.Fatalf("answers_total{member=fresh} = %v, want 1\n%s", v, dump())
	}
}
