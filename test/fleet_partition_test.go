package test

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// partitionFleet starts n members in regions a, b and c (default fleet timers),
// each bound to its own loopback IP (127.0.100.N) and advertising an address
// (127.0.101.N) where a coretest.Partition forwards to it, so that the test can cut
// the fleet apart. Check web, on 3 checkers every second, is www.example.org's
// primary's check.
func partitionFleet(t *testing.T, n int, web string) ([]*fleetMember, *coretest.Partition) {
	t.Helper()
	coretest.Binary(t) // build before timing anything
	ms, keyFile := newFleetMembers(t, n)
	gs := make([]coretest.Gossiper, n)
	for i, m := range ms {
		m.gossipIP = fmt.Sprintf("127.0.100.%d", i+1)
		m.advertise = fmt.Sprintf("127.0.101.%d:%d", i+1, coretest.FreePort(t))
		gs[i] = coretest.Gossiper{Bind: netip.MustParseAddrPort(m.bindAddr()), Advertise: netip.MustParseAddrPort(m.advertise)}
	}
	for i, m := range ms {
		m.corefile = m.fleetCorefile(ms, keyFile, "region "+placementRegion(i), fmt.Sprintf(`check web http %s/ {
			interval 1s
			failure_threshold 1
			checkers 3
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}`, web))
	}
	p := coretest.NewPartition(t, gs) // stopped after the members, which start after it
	for _, m := range ms {
		m.start(t)
	}
	return ms, p
}

// sideDecides says whether every member of side places web on checkers (in any
// order), counts fresh reports of them only, at least least of them, and decides
// healthy (every counted report healthy) or not (none): each side decides from its
// own checkers alone.
func sideDecides(side []*fleetMember, checkers []string, healthy bool, least int) bool {
	for _, m := range side {
		v := m.checkView("web")
		if v == nil || v.Total < least || !sameSet(v.Checkers, checkers) {
			return false
		}
		if healthy && v.Healthy != v.Total || !healthy && v.Healthy != 0 {
			return false
		}
		for _, r := range v.Members {
			if r.Counted && !slices.Contains(checkers, r.Member) {
				return false
			}
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// answers says whether every member of side answers www.example.org with want.
func answers(t *testing.T, side []*fleetMember, want string) bool {
	for _, m := range side {
		if m.answer(t) != want {
			return false
		}
	}
	return true
}

// liveProbers returns the checkers that probed l within the last interval (and a
// 200 ms margin for a probe's own time).
func liveProbers(l *probeLog, interval time.Duration) []string {
	var out []string
	for name := range l.since(time.Now().Add(-interval - 200*time.Millisecond)) {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// TestFleetPartitionCheckersCutOff runs 8 CoreDNS processes in regions a, b and c
// with the fleet block users write (default timers: WAN profile, heartbeat 1 s,
// suspicion 5 s), gossiping through a loopback proxy at their advertised
// addresses. Check web is on 3 checkers, interval 1 s, failure_threshold 1. The
// fleet is split into {web's 3 checkers} / {the other 5}, and from then on the
// endpoint fails the probes of the 3 (so each side's decision shows in its
// answers):
//   - within suspicion + 2 intervals (+1 s for the race detector on a shared
//     machine) 3 of the other 5 probe web, and the 5 agree on them and count
//     their fresh reports only (healthy: the primary); they never answer the
//     secondary;
//   - the 3 keep web on themselves and count their own reports only (down: the
//     secondary);
//   - for 5 intervals after, every member of each side counts all 3 of its
//     side's checkers in every sample, and the members of a side miss at most 10%
//     of each other's heartbeats (the memberlist list still holds the other side,
//     which gossip spends transmissions on);
//   - after the heal (the endpoint passing everyone's probes again), every member
//     agrees on the first 3 checkers within 5 s, and the other 3 stop probing.
func TestFleetPartitionCheckersCutOff(t *testing.T) {
	web := newProbeLog(t)
	ms, proxy := partitionFleet(t, 8, web.URL)
	diag := partitionDiag(ms, web, proxy)
	var first []string
	fleetWait(t, 60*time.Second, "every member places web on the same 3 checkers and counts their 3 reports",
		func() bool { first = placedOn(ms); return first != nil }, diag)
	checkAdvertisedRows(t, ms, first)

	var cut, rest []*fleetMember
	var cutAt, restAt []int
	for i, m := range ms {
		if slices.Contains(first, m.name) {
			cut, cutAt = append(cut, m), append(cutAt, i)
		} else {
			rest, restAt = append(rest, m), append(restAt, i)
		}
	}
	samples := sampleAnswersBut(rest, fleetSecondary, false)
	split := time.Now()
	proxy.Split(cutAt, restAt)
	web.failFrom(first...)
	second := partitionedSides(t, web, cut, rest, first, split, diag)

	web.failFrom()
	fleetWait(t, 10*time.Second, "the 3 cut off answer the primary again once their probes pass",
		func() bool { return sideDecides(cut, first, true, 3) && answers(t, cut, fleetPrimary) }, diag)
	heal := time.Now()
	proxy.Heal()
	t.Logf("the partition lasted %s", heal.Sub(split).Round(time.Millisecond))
	healedSides(t, web, ms, first, second, heal, diag)
	wrong, summary := samples.stop()
	t.Logf("answers of the 5 members away from web's first checkers, split to healed: %s", summary)
	if wrong > 0 {
		t.Errorf("%d answers with the secondary from the 5 members away from web's first checkers", wrong)
	}
}

// sideBeatsMissed is the heartbeats the members of side missed from each other so
// far, by their coredns_healthroute_fleet_heartbeats_missed_total.
func sideBeatsMissed(t *testing.T, side []*fleetMember) float64 {
	n := 0.0
	for _, m := range side {
		fams := m.scrapeMetrics(t)
		for _, o := range side {
			if o != m {
				n += metricValue(fams, "coredns_healthroute_fleet_heartbeats_missed_total", map[string]string{"member": o.name})
			}
		}
	}
	return n
}

// uncounted describes, for each member of ms that counts fewer than 3 reports of
// web, the rows of the checkers it does not count.
func uncounted(ms []*fleetMember) string {
	var b strings.Builder
	for _, m := range ms {
		v := m.checkView("web")
		if v == nil || v.Total >= 3 {
			continue
		}
		for _, r := range v.Members {
			if r.Checker && !r.Counted {
				fmt.Fprintf(&b, "%s does not count %s (reachable %t, no verdict %t, observed %s ago, heard %s ago); ", m.name, r.Member,
					r.Reachable, r.NoVerdict, time.Since(r.Observed).Round(time.Millisecond), time.Since(r.Heard).Round(time.Millisecond))
			}
		}
	}
	return b.String()
}

// partitionDiag says what each member places and counts (and any stall it logged),
// what web's endpoint got lately and what the proxies passed and dropped.
func partitionDiag(ms []*fleetMember, web *probeLog, proxy *coretest.Partition) func() string {
	return func() string {
		var b strings.Builder
		b.WriteString(placementDiag(ms, web)())
		for _, m := range ms {
			var counted []string
			if v := m.checkView("web"); v != nil {
				for _, r := range v.Members {
					if r.Counted {
						counted = append(counted, r.Member)
					}
				}
			}
			fmt.Fprintf(&b, "%s counts %v", m.name, counted)
			for _, l := range strings.Split(m.srv.Output(), "\n") {
				if strings.Contains(l, "did not run for") { // a stall: the machine is loaded
					fmt.Fprintf(&b, "; %s", l)
				}
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "proxied %d, dropped %d\n", proxy.Forwarded.Load(), proxy.Dropped.Load())
		return b.String()
	}
}

// checkAdvertisedRows holds that the members reach each other at their advertised
// addresses: ms[0] shows each of web's checkers at it, and the status page writes
// it.
func checkAdvertisedRows(t *testing.T, ms []*fleetMember, checkers []string) {
	t.Helper()
	at := map[string]string{}
	for _, m := range ms {
		at[m.name] = m.advertise
	}
	for _, r := range ms[0].checkView("web").Members {
		if r.Checker && r.Address != at[r.Member] {
			t.Errorf("%s shows checker %s at %q, want its advertised address %s", ms[0].name, r.Member, r.Address, at[r.Member])
		}
	}
	_, page := httpDo(t, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", ms[0].api), "", "")
	if !strings.Contains(page, fmt.Sprintf("] %s: up, last report ", at[checkers[0]])) {
		t.Errorf("the status page does not write checker %s at its advertised address %s", checkers[0], at[checkers[0]])
	}
}

// partitionedSides holds what each side of the split does, and returns the
// checkers the rest placed web on.
func partitionedSides(t *testing.T, web *probeLog, cut, rest []*fleetMember, first []string, split time.Time, diag func() string) []string {
	t.Helper()
	const suspicion, interval, raceMargin = 5 * time.Second, time.Second, time.Second
	isFirst := func(name string) bool { return slices.Contains(first, name) }
	fleetWait(t, 30*time.Second, "3 of the rest probe web", func() bool {
		return len(slices.DeleteFunc(liveProbers(web, interval), isFirst)) == 3
	}, diag)
	took := time.Since(split)
	t.Logf("partition: 3 of the other 5 probe web %s after the split", took.Round(time.Millisecond))
	if bound := suspicion + 2*interval + raceMargin; took > bound {
		t.Errorf("3 of the other 5 probed web %s after the split, want within suspicion + 2 intervals + %s (%s)", took, raceMargin, bound)
	}
	var second []string
	fleetWait(t, 10*time.Second, "the rest agree on 3 of their own and count their fresh reports only", func() bool {
		c := placedOn(rest)
		if c == nil || slices.ContainsFunc(c, isFirst) || !sideDecides(rest, c, true, 3) {
			return false
		}
		second = c
		return true
	}, diag)
	t.Logf("partition: the other 5 agree on %v and count only their reports %s after the split", second, time.Since(split).Round(time.Millisecond))
	fleetWait(t, 10*time.Second, "the 3 cut off keep web on themselves, count their own reports (down) and answer the secondary",
		func() bool { return sideDecides(cut, first, false, 3) && answers(t, cut, fleetSecondary) }, diag)

	// A measuring window of 5 intervals: on each side every member counts its 3
	// checkers' fresh reports and answers by them, and the members of a side hear
	// each other's beats (gossip also goes to the other side, which memberlist
	// still lists: beats go straight to the members heard while some are silent),
	// and web is probed by both sides' checkers, 6 an interval (±2).
	const windowIntervals = 5
	missedBefore := [2]float64{sideBeatsMissed(t, cut), sideBeatsMissed(t, rest)}
	window := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for time.Since(window) < windowIntervals*interval {
		if !sideDecides(rest, second, true, 3) || !answers(t, rest, fleetPrimary) || !sideDecides(cut, first, false, 3) || !answers(t, cut, fleetSecondary) {
			t.Fatalf("a side's count or decision changed during the partition: %s\n%s", uncounted(append(slices.Clone(rest), cut...)), diag())
		}
		<-tick.C
	}
	// The window ends now, however long its last round of queries took on a loaded
	// machine: the probes are counted and the bound is scaled to this moment.
	got := web.since(window)
	secs := time.Since(window).Seconds()
	intervals := secs / interval.Seconds()
	for i, side := range [][]*fleetMember{cut, rest} {
		beats := secs * float64(len(side)*(len(side)-1))
		missed := sideBeatsMissed(t, side) - missedBefore[i]
		t.Logf("partition: the side of %d missed %.0f of about %.0f heartbeats among themselves in the window", len(side), missed, beats)
		if missed > beats/10 {
			t.Errorf("the side of %d missed %.0f of about %.0f heartbeats among themselves, want at most 10%%", len(side), missed, beats)
		}
	}
	if n := float64(total(got)); n < 4*intervals || n > 8*intervals || !sameSet(slices.Collect(maps.Keys(got)), append(slices.Clone(first), second...)) {
		t.Errorf("during the partition web got %v (%.0f) in %.1f intervals, want 6 an interval (±2) from %v and %v", got, n, intervals, first, second)
	}
	return second
}

// healedSides holds what the fleet does after the heal: one set of checkers (the
// first, whose scores are the highest), and the second set stops probing.
func healedSides(t *testing.T, web *probeLog, ms []*fleetMember, first, second []string, heal time.Time, diag func() string) {
	t.Helper()
	const agreeBound, interval = 5 * time.Second, time.Second
	fleetWait(t, 30*time.Second, "every member agrees on web's first 3 checkers again", func() bool {
		c := placedOn(ms)
		return c != nil && sameSet(c, first)
	}, diag)
	took := time.Since(heal)
	t.Logf("heal: all 8 agree on %v %s after the heal", first, took.Round(time.Millisecond))
	if took > agreeBound {
		t.Errorf("all 8 agreed on web's checkers %s after the heal, want within %s", took, agreeBound)
	}
	fleetWait(t, 30*time.Second, "only the first 3 checkers probe web", func() bool {
		return slices.Equal(liveProbers(web, interval), slices.Sorted(slices.Values(first)))
	}, diag)
	took = time.Since(heal)
	t.Logf("heal: %v probed web last at heal%+dms, and not in the interval (+200 ms) to %s after it", second,
		web.lastFrom(second).Sub(heal).Milliseconds(), took.Round(time.Millisecond))
	if took > agreeBound+interval {
		t.Errorf("%v stopped probing web %s after the heal, want within %s", second, took, agreeBound+interval)
	}
	got := web.measure(3 * interval)
	if !perInterval(got, 3) || !sameSet(slices.Collect(maps.Keys(got)), first) {
		t.Errorf("after the heal web got %v (%d) in 3 intervals, want 3 an interval (±1) from %v", got, total(got), first)
	}
	fleetWait(t, 5*time.Second, "every member answers the primary", func() bool { return answers(t, ms, fleetPrimary) }, diag)
}
