package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// The failover bound of a fleet member that does not probe the check: the
// checkers' threshold window (failure_threshold intervals, counted from the first
// failed probe, which may come up to an interval after the failure), a heartbeat
// for the checkers' change to reach the member, and a heartbeat for its decision
// to be published (docs/fleet.md, Placement).
func nonCheckerBound(threshold int, interval time.Duration) time.Duration {
	return time.Duration(threshold+1)*interval + 2*time.Second
}

// TestFleetNonCheckersFollowCheckers runs 8 CoreDNS processes with the fleet block
// users write (default timers), check web on `checkers 3` (interval 1 s,
// failure_threshold 3) and one member of `role answer`: most members are not
// checkers of web and never probe it. When web's endpoint fails, every member,
// checker or not, answers the secondary within nonCheckerBound; when it heals,
// every member answers the primary again within the same bound. The same holds
// after two of web's checkers are SIGKILLed and the members left placed web on
// new checkers.
func TestFleetNonCheckersFollowCheckers(t *testing.T) {
	const threshold, interval = 3, time.Second
	bound := nonCheckerBound(threshold, interval)
	coretest.Binary(t) // build before timing anything
	ep := newFleetEndpoint(t, "")
	ms, keyFile := newFleetMembers(t, 8)
	for i, m := range ms {
		extra := ""
		if i == len(ms)-1 {
			extra = "role answer"
		}
		m.corefile = m.fleetCorefile(ms, keyFile, extra, fmt.Sprintf(`check web http %s/ {
			interval 1s
			failure_threshold %d
			checkers 3
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}`, ep.URL, threshold))
	}
	for _, m := range ms {
		m.start(t)
	}
	diag := placementDiag(ms)
	var checkers []string
	fleetWait(t, 60*time.Second, "every member places web on the same 3 checkers and counts their 3 reports",
		func() bool { checkers = placedOn(ms); return checkers != nil }, diag)
	if slices.Contains(checkers, ms[len(ms)-1].name) {
		t.Fatalf("the member of role answer %s is one of web's checkers %v", ms[len(ms)-1].name, checkers)
	}
	t.Logf("web's checkers: %v", checkers)

	// flip fails or heals the endpoint and waits until every member of live
	// answers want, within bound.
	flip := func(live []*fleetMember, down bool, what string) {
		t.Helper()
		want := fleetPrimary
		if down {
			want = fleetSecondary
		}
		at := time.Now()
		ep.down.Store(down)
		answered := map[string]time.Duration{}
		fleetWait(t, 3*bound, what, func() bool {
			for _, m := range live {
				if _, ok := answered[m.name]; ok {
					continue
				}
				if m.answer(t) == want {
					answered[m.name] = time.Since(at)
				}
			}
			return len(answered) == len(live)
		}, diag)
		var slowest time.Duration
		var b strings.Builder
		for _, m := range live {
			fmt.Fprintf(&b, "%s %s; ", m.name, answered[m.name].Round(10*time.Millisecond))
			slowest = max(slowest, answered[m.name])
		}
		t.Logf("%s: %s", what, b.String())
		if slowest > bound {
			t.Errorf("%s: the slowest member took %s, want within %s: %s", what, slowest.Round(time.Millisecond), bound, b.String())
		}
	}
	flip(ms, true, "every member answers the secondary after the endpoint failed")
	flip(ms, false, "every member answers the primary after the endpoint healed")

	killed, left := splitCheckers(ms, checkers, 2)
	for _, m := range killed {
		m.kill(t)
	}
	fleetWait(t, 60*time.Second, "the members left place web on 3 live checkers and count their 3 reports", func() bool {
		c := placedOn(left)
		return c != nil && !slices.ContainsFunc(c, func(name string) bool {
			return slices.ContainsFunc(killed, func(m *fleetMember) bool { return m.name == name })
		})
	}, diag)
	t.Logf("after 2 checkers were killed, web's checkers: %v", placedOn(left))
	flip(left, true, "after 2 checkers were killed, every member left answers the secondary after the endpoint failed")
	flip(left, false, "after 2 checkers were killed, every member left answers the primary after the endpoint healed")
}

// splitCheckers returns n of ms that are among checkers, and the others.
func splitCheckers(ms []*fleetMember, checkers []string, n int) (some, others []*fleetMember) {
	for _, m := range ms {
		if slices.Contains(checkers, m.name) && len(some) < n {
			some = append(some, m)
		} else {
			others = append(others, m)
		}
	}
	return some, others
}
