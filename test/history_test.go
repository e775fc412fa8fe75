package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// TestHistoryTwentyFlipsSurviveRestart flips a check of a real CoreDNS 20 times
// against a real HTTP endpoint: /v1/checks/web/history shows the 20 changes in order,
// with times and reasons; after a restart with the same history_dir, they are all
// still there.
func TestHistoryTwentyFlipsSurviveRestart(t *testing.T) {
	web := newFlipServer(t, false)
	histDir := t.TempDir()
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d {
			history_dir %s
		}
		%s
		record www.example.org. failover {
			primary   A 192.0.2.10 check web id east
			secondary A 198.51.100.10 id west
		}
	}
}
`, port, apiPort, histDir, fastCheck("web", web.URL+"/"))
	srv := coretest.Start(t, corefile, port, "www.example.org")
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	history := func() view.History {
		var h view.History
		getJSON(t, base+"/v1/checks/web/history", &h)
		return h
	}
	waitUntil(t, 10*time.Second, "web's first probe", func() bool { return apiChecks(t, base)["web"].Seen }, srv.Output)
	start := time.Now()
	for i := range 20 {
		web.ok.Store(i%2 == 1) // the first flip fails it
		waitUntil(t, 10*time.Second, fmt.Sprintf("change %d in the history", i+1), func() bool { return len(history().Changes) == i+1 },
			func() string { return fmt.Sprintf("%+v\n%s", history(), srv.Output()) })
	}
	end := time.Now()
	checkTwenty := func(h view.History) {
		t.Helper()
		if len(h.Changes) != 20 {
			t.Fatalf("%d changes, want 20: %+v", len(h.Changes), h.Changes)
		}
		for i, c := range h.Changes {
			from, to, reason := "healthy", "unhealthy", "status 503"
			if i%2 == 1 {
				from, to, reason = "unhealthy", "healthy", "probes pass"
			}
			if c.From != from || c.To != to || !strings.Contains(c.Reason, reason) {
				t.Errorf("change %d: %s -> %s (%q), want %s -> %s (%q)", i, c.From, c.To, c.Reason, from, to, reason)
			}
			if c.Time.Before(start.Add(-time.Second)) || c.Time.After(end.Add(time.Second)) {
				t.Errorf("change %d at %v, outside the test's flips (%v to %v)", i, c.Time, start, end)
			}
			if i > 0 && c.Time.Before(h.Changes[i-1].Time) {
				t.Errorf("change %d at %v, before change %d at %v", i, c.Time, i-1, h.Changes[i-1].Time)
			}
		}
		probes := 0
		for _, m := range h.Minutes {
			probes += m.Probes
		}
		if probes < 20 {
			t.Errorf("the minutes hold %d probes, want at least the 20 that changed the status", probes)
		}
	}
	checkTwenty(history())
	pageTwenty(t, base)

	// Restart: the same Corefile, the same history_dir.
	srv.Stop()
	srv = coretest.Start(t, corefile, port, "www.example.org")
	after := history()
	checkTwenty(after)
	pageTwenty(t, base)
	waitUntil(t, 10*time.Second, "web's last probe phases on /v1/checks", func() bool {
		c := apiChecks(t, base)["web"]
		return c.Phases != nil && c.Phases.ConnectMs > 0 && c.Phases.FirstByteMs > 0 && c.Phases.TotalMs >= c.Phases.FirstByteMs
	}, func() string { return fmt.Sprintf("%+v", apiChecks(t, base)["web"].Phases) })
	if code, body := httpDo(t, "GET", base+"/v1/checks/nosuch/history", "", ""); code != 404 {
		t.Errorf("history of an unknown check: %d %s, want 404", code, body)
	}
}

// pageTwenty checks that the status page's recent changes list web's 20 changes,
// newest first: the last flip healed it.
func pageTwenty(t *testing.T, base string) {
	t.Helper()
	_, page := httpDo(t, "GET", base+"/?refresh=0", "", "")
	start, end := strings.Index(page, `<section class="recent"`), strings.Index(page, "</section>")
	if start < 0 || end < start {
		t.Fatalf("the status page has no recent changes section:\n%s", page)
	}
	items := strings.Split(page[start:end], "<li>")[1:]
	if len(items) != 20 {
		t.Fatalf("the page lists %d recent changes, want 20:\n%s", len(items), page[start:end])
	}
	for i, it := range items {
		to := "healthy"
		if i%2 == 1 {
			to = "unhealthy"
		}
		if !strings.Contains(it, `href="#check-web"`) || !strings.Contains(it, `class="to-`+to+`"`) {
			t.Errorf("recent change %d (newest first): %s; want check web to %s", i, it, to)
		}
	}
}
