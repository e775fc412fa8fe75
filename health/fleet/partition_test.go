package fleet

import (
	"fmt"
	"testing"
	"time"
)

// TestPartitionSidesKeepCountingDefaults splits 8 members (timers users get) 3/5.
// Beats are gossiped to random members memberlist lists, the other side's too
// until it declares them dead (30 s or more at the WAN profile), so the small side
// loses most of its gossip transmissions; each member heard from must still hear
// every member of its own side within suspicion. Sampled every 50 ms for 10 s once
// each side counts its own members only, no member may count fewer than its whole
// side.
func TestPartitionSidesKeepCountingDefaults(t *testing.T) {
	const fp = "fp-web"
	n := &netsim{}
	ms := cluster(t, n, 8, member{})
	for _, m := range ms {
		probe(t, m, fp, time.Second, false)
	}
	counts := func(side []*Fleet) bool {
		for _, m := range side {
			if m.View(fp).Total != len(side) {
				return false
			}
		}
		return true
	}
	detail := func() string {
		s := ""
		for _, m := range ms {
			s += fmt.Sprintf("\n%s counts %d", m.Name(), m.View(fp).Total)
		}
		return s
	}
	waitForDetail(t, 20*time.Second, "every member counts all 8", func() bool { return counts(ms) }, detail)
	small, large := ms[:3], ms[3:]
	n.split(small, large)
	waitForDetail(t, defaultSuspicion+5*time.Second, "each side counts its own members only",
		func() bool { return counts(small) && counts(large) }, detail)

	samples, short := 0, map[string]int{}
	var silence time.Duration // the longest a member went unheard by one of its side
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for start := time.Now(); time.Since(start) < 10*time.Second; <-tick.C { // a measuring window
		samples++
		for _, side := range [][]*Fleet{small, large} {
			for _, m := range side {
				if got := m.View(fp).Total; got < len(side) {
					short[m.Name()]++
				}
				for _, o := range side {
					if o != m {
						silence = max(silence, time.Since(lastHeard(m, o.Name())))
					}
				}
			}
		}
	}
	t.Logf("%d samples; members counting fewer than their side: %v; longest silence within a side %s", samples, short, silence.Round(time.Millisecond))
	for name, k := range short {
		t.Errorf("%s counted fewer than its side's members in %d of %d samples", name, k, samples)
	}
	// Beats go straight to the members of a side while the other side is silent:
	// one lost now and then costs a beat, not a run of them.
	if bound := 3 * DefaultBeat; silence > bound {
		t.Errorf("a member went unheard by one of its own side for %s, want at most %s (3 beats)", silence, bound)
	}
}
