package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestSimulation20x1000 runs 20 members with 1,000 checks each. Check j is seen
// healthy by j%21 of the members, so the expected quorum decision is known (healthy
// from 4 of 20 on), and every member must reach it for every check within a bound.
// It logs the convergence time and the gossip bytes on the wire (after encryption).
func TestSimulation20x1000(t *testing.T) {
	if testing.Short() {
		t.Skip("20 members on loopback")
	}
	const members, checks = 20, 1000
	n := &netsim{}
	// Timers of a small LAN, a few times faster than production, so that 20 members
	// under the race detector on two cores still keep up.
	tune := func(c *memberlist.Config) {
		fast(c)
		c.GossipInterval, c.ProbeInterval, c.ProbeTimeout = 100*time.Millisecond, time.Second, 500*time.Millisecond
		c.SuspicionMult, c.PushPullInterval = 4, 5*time.Second
	}
	ms := cluster(t, n, members, member{beat: 250 * time.Millisecond, stale: 5 * time.Second, tune: tune})
	t.Logf("fleet of %d formed", members)
	fps := make([]string, checks)
	for j := range fps {
		fps[j] = fmt.Sprintf("%024x", j*7919)
	}
	down := func(i, j int) bool { return i >= j%21 }
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
		t0 := time.Now()
		probe() // every poll is a probe round, as the schedulers would run
		t.Logf("probe %s", time.Since(t0))
		defer func() { t.Logf("poll %s", time.Since(t0)) }()
		for i, m := range ms {
			if v := m.View(fps[checks-1]); v.Total != members {
				t.Logf("%s: %+v", m.Name(), v.Total)
			}
			for j, fp := range fps {
				want := !Healthy(j%21, members, DefaultQuorum)
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
	waitFor(t, 60*time.Second, "20 members agree on 1,000 checks", converged)
	took, spent := time.Since(start), n.bytes.Load()-base
	t.Logf("converged in %s; %d bytes on the wire meanwhile (%.0f per member)", took.Round(time.Millisecond), spent, float64(spent)/members)

	// Steady state: same results, only beats and memberlist's own traffic.
	base, start = n.bytes.Load(), time.Now()
	window := time.NewTimer(2 * time.Second) // a measuring window, not a wait for an event
	<-window.C
	probe()
	spent, el := n.bytes.Load()-base, time.Since(start).Seconds()
	t.Logf("steady state: %.0f bytes/s for the fleet, %.0f bytes/s per member", float64(spent)/el, float64(spent)/el/members)
	if !converged() {
		t.Error("decisions moved in steady state")
	}
}
