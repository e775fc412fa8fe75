package fleet

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestSimulation20x1000 runs 20 members with 1,000 checks each (200 under the race
// detector, which slows the test's own bookkeeping more than the fleet). Check j is seen
// healthy by j%21 of the members, so the expected quorum decision is known (healthy
// from 4 of 20 on), and every member must reach it for every check within a bound
// while every member probes every check each second:
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
	var flipped atomic.Bool // then the first two members see the checks with 4 healthy fail
	healthy := func(j int) int {
		if flipped.Load() && j%21 == 4 {
			return 2
		}
		return j % 21
	}
	down := func(i, j int) bool { return i >= j%21 || flipped.Load() && j%21 == 4 && i < 2 }
	// Every member probes every check each second, as its scheduler would.
	base, start := n.bytes.Load(), time.Now()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for i, m := range ms {
				for j, fp := range fps {
					m.Local(fp, status(down(i, j)))
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	converged := func() bool {
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
	window := time.NewTimer(2 * time.Second) // a measuring window, not a wait for an event
	<-window.C
	spent, el := n.bytes.Load()-base, time.Since(start).Seconds()
	t.Logf("steady state: %.0f bytes/s for the fleet, %.0f bytes/s per member", float64(spent)/el, float64(spent)/el/members)
	waitFor(t, 10*time.Second, "decisions hold in steady state", converged)

	// Changes travel as relayed change messages.
	base, start = n.bytes.Load(), time.Now()
	flipped.Store(true)
	waitFor(t, 30*time.Second, "every member sees the flips", converged)
	took, spent = time.Since(start), n.bytes.Load()-base
	t.Logf("%d flips at 2 members reached all in %s; %d bytes meanwhile", 2*(checks/21+1), took.Round(time.Millisecond), spent)
	if took > simFlip {
		t.Errorf("the flips reached every member in %s, want within %s", took, simFlip)
	}
}
