package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestFleetClockOffsets runs three CoreDNS processes (default fleet timers, the
// check probed every second) and gives the third member's host a wrong clock
// (HEALTHROUTE_TEST_CLOCK_OFFSET, read only by the tests' build): started 1 h
// behind, restarted with the right time (a clock stepped forward by an hour),
// restarted 10 min ahead, restarted with the right time again (stepped back by 10
// min). After each start, from the moment the others first count a report they
// heard from the new process, both others count it in every sample (200 ms apart,
// 5 s), and the offset shows in coredns_healthroute_fleet_clock_offset_seconds.
// (Counted alone is not enough: for a suspicion after a kill the others still count
// the killed process's last report, and a sample can fall between that going stale
// and the new process's first; so each restart waits for it to go stale.)
func TestFleetClockOffsets(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes, 4 starts")
	}
	coretest.Binary(t)
	ep := newFleetEndpoint(t, "")
	ms := fleetMembers(t, 3, ep.URL)
	for _, m := range ms[:2] {
		m.start(t)
	}
	c := ms[2]
	diag := func() string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s's view: %+v\n", m.name, m.fleetView())
		}
		return b.String()
	}
	// counted: m counts c's report, heard after since.
	counted := func(m *fleetMember, since time.Time) bool {
		r, ok := reportOf(m.fleetView(), c.name)
		return ok && r.Counted && r.Heard.After(since)
	}
	for i, offset := range []string{"-1h", "0s", "10m", "0s"} {
		if i > 0 {
			c.kill(t)
			fleetWait(t, 15*time.Second, "both others stop counting the killed "+c.name, func() bool {
				return !counted(ms[0], time.Time{}) && !counted(ms[1], time.Time{})
			}, diag)
		}
		since := time.Now()
		counts := func(m *fleetMember) bool { return counted(m, since) }
		c.srv = coretest.StartWith(t, c.corefile, c.dns, "www.example.org", coretest.Options{Env: []string{"HEALTHROUTE_TEST_CLOCK_OFFSET=" + offset}})
		fleetWait(t, 15*time.Second, "both others count "+c.name, func() bool { return counts(ms[0]) && counts(ms[1]) }, diag)
		took := time.Since(since)
		tick := time.NewTicker(200 * time.Millisecond)
		missed := 0
		for range 25 {
			<-tick.C
			for _, m := range ms[:2] {
				if !counts(m) {
					missed++
				}
			}
		}
		tick.Stop()
		fams, _ := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", ms[0].metrics))
		off := metricValue(fams, "coredns_healthroute_fleet_clock_offset_seconds", map[string]string{"member": c.name})
		t.Logf("clock offset %s: counted by both others %s after the start, then missed in %d of 50 samples; %s shows an offset of %.1f s",
			offset, took.Round(time.Millisecond), missed, ms[0].name, off)
		if missed > 0 {
			t.Errorf("clock offset %s: not counted in %d of 50 samples\n%s", offset, missed, diag())
		}
		want, _ := time.ParseDuration(offset)
		if d := off - want.Seconds(); d < -1.5 || d > 1.5 {
			t.Errorf("clock offset %s: the metric says %.1f s", offset, off)
		}
	}
}
