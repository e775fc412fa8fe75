package fleet

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// flipSpread flips one member's report of fp (members in turn) flips times, each
// once the previous flip has reached every member and a beat has passed, and
// returns how long each took to reach every other member.
func flipSpread(t *testing.T, ms []*Fleet, ps []*prober, fp string, flips int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for k := range flips {
		i := k % len(ms)
		down := !ps[i].down.Load()
		ps[i].down.Store(down)
		flipped := time.Now()
		ms[i].Local(fp, status(down))
		waitFor(t, 30*time.Second, fmt.Sprintf("flip %d reaches every member", k+1), func() bool {
			for j, m := range ms {
				if j == i {
					continue
				}
				seen := false
				for _, r := range m.View(fp).Reports {
					seen = seen || r.Member == ms[i].Name() && r.Down == down
				}
				if !seen {
					return false
				}
			}
			return true
		})
		out = append(out, time.Since(flipped))
		pause(1500 * time.Millisecond) // the next flip a beat or so later: a scenario step
	}
	return out
}

// TestFlipSpreadUnderLossDefaults flips reports 8 times among three members with no
// loss, then with 30% of all datagrams lost: a change whose own message is lost
// arrives with one of the next 3 beats (each sent several times and relayed), so
// loss adds at most about a heartbeat to the slowest flip's spread.
func TestFlipSpreadUnderLossDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("16 flips at the default timers")
	}
	n := &netsim{}
	ms := cluster(t, n, 3, member{})
	const fp = "fp-flip"
	var ps []*prober
	for _, m := range ms {
		ps = append(ps, probe(t, m, fp, time.Second, false))
	}
	waitFor(t, 10*time.Second, "every member counts all three", func() bool {
		for _, m := range ms {
			if m.View(fp).Total != 3 {
				return false
			}
		}
		return true
	})
	clear := flipSpread(t, ms, ps, fp, 8)
	n.lossy(0.3)
	lossy := flipSpread(t, ms, ps, fp, 8)
	n.lossy(0)
	round := func(ds []time.Duration) []time.Duration {
		out := slices.Clone(ds)
		for i := range out {
			out[i] = out[i].Round(time.Millisecond)
		}
		slices.Sort(out)
		return out
	}
	t.Logf("spread without loss: %v", round(clear))
	t.Logf("spread with 30%% loss: %v", round(lossy))
	if worst, base := slices.Max(lossy), slices.Max(clear); worst > base+DefaultBeat {
		t.Errorf("the slowest flip took %s with 30%% loss, %s without: more than one heartbeat more", worst, base)
	}
}
