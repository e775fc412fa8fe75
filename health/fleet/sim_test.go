package fleet

import (
	"fmt"
	"testing"
	"time"
)

// TestSimulation20x1000 runs 20 members with 1,000 checks each (200 under the race
// detector, which slows the test's own bookkeeping more than the fleet). Check j is seen
// healthy by j%21 of the members, so the expected quorum decision is known (healthy
// from 4 of 20 on), and every member must reach it for every check within a bound:
// simBoot after a cold start, simFlip after 2 members' results flip. It logs the
// times and the gossip bytes on the wire (after encryption). It runs at the timers
// users get.
func TestSimulation20x1000(t *testing.T) {
	const simBoot, simFlip = 20 * time.Second, 8 * time.Second
	if testing.Short() {
		t.Skip("20 members on loopback")
	}
	const members = 20
	checks := 1000
	if raceDetector {
		checks = 200
	}
	n := &netsim{}
	ms := cluster(t, n, members, member{})
	fps := make([]string, checks)
	for j := range fps {
		fps[j] = fmt.Sprintf("%024x", j*7919)
	}
	flipped := false // then the first two members see the checks with 4 healthy fail
	healthy := func(j int) int {
		if flipped && j%21 == 4 {
			return 2
		}
		return j % 21
	}
	down := func(i, j int) bool { return i >= j%21 || flipped && j%21 == 4 && i < 2 }
	probe := func() {
		for i, m := range ms {
			for j, fp := range fps {
				m.Local(fp, status(down(i, j)))
			}
		}
	}
	base, start := n.bytes.Load(), time.Now()
	probe()
	converged := func() bool {
		probe() // every poll is a probe round, as the schedulers would run
		for i, m := range ms {
			for j, fp := range fps {
				want := !Healthy(healthy(j), members, DefaultQuorum)
				if m.Status(fp, status(down(i, j))).Down != want {
					return false
				}
			}
			if v := m.View(fps[checks-1]); v.Total != members {
				return false
			}
		}
		return true
	}
	waitFor(t, 60*time.Second, fmt.Sprintf("20 members agree on %d checks", checks), converged)
	took, spent := time.Since(start), n.bytes.Load()-base
	t.Logf("%d checks converged in %s; %d bytes on the wire meanwhile (%.0f per member)", checks, took.Round(time.Millisecond), spent, float64(spent)/members)
	if took > simBoot {
		t.Errorf("a cold start converged in %s, want within %s", took, simBoot)
	}

	// Steady state: same results, only beats and memberlist's own traffic.
	base, start = n.bytes.Load(), time.Now()
	// A measuring window of 2 s, not a wait for an event, probing every 500 ms as
	// schedulers would (a report whose probe grows older than 3 gaps between
	// probes and 2 beats loses its verdict).
	tick := time.NewTicker(500 * time.Millisecond)
	for range 4 {
		<-tick.C
		probe()
	}
	tick.Stop()
	spent, el := n.bytes.Load()-base, time.Since(start).Seconds()
	t.Logf("steady state: %.0f bytes/s for the fleet, %.0f bytes/s per member", float64(spent)/el, float64(spent)/el/members)
	waitFor(t, 10*time.Second, "decisions hold in steady state", converged)

	// Changes travel as relayed change messages.
	base, start = n.bytes.Load(), time.Now()
	flipped = true
	waitFor(t, 30*time.Second, "every member sees the flips", converged)
	took, spent = time.Since(start), n.bytes.Load()-base
	t.Logf("%d flips at 2 members reached all in %s; %d bytes meanwhile", 2*(checks/21+1), took.Round(time.Millisecond), spent)
	if took > simFlip {
		t.Errorf("the flips reached every member in %s, want within %s", took, simFlip)
	}
}
