package health

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pacedScheduler holds n acquired checks (failure threshold 1) and counts the
// snapshots it publishes; nothing probes them, the tests record results.
type pacedScheduler struct {
	*Scheduler
	entries []*entry
	mu      sync.Mutex
	pubs    []time.Time // when each snapshot was published
}

func newPacedScheduler(t *testing.T, n int) *pacedScheduler {
	ps := &pacedScheduler{Scheduler: &Scheduler{}}
	specs := make([]*Spec, n)
	for i := range specs {
		specs[i] = testSpec(fmt.Sprintf("c%d", i), 10*time.Second, 1, 1)
	}
	ps.Acquire(specs)
	for _, sp := range specs {
		ps.entries = append(ps.entries, ps.checks[sp.Fingerprint()])
	}
	t.Cleanup(ps.Subscribe(func(snap *Snapshot) {
		if snap != nil {
			ps.mu.Lock()
			ps.pubs = append(ps.pubs, time.Now())
			ps.mu.Unlock()
		}
	}))
	return ps
}

func (ps *pacedScheduler) published() []time.Time {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]time.Time(nil), ps.pubs...)
}

// A burst of first results (every check reporting at the same instant, as at
// start-up) is published in a few snapshots, not one each, and the last holds them
// all within a gap; a single flip after it is published at once.
func TestPublishCoalescesBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		ps := newPacedScheduler(t, n)
		var wg sync.WaitGroup
		for _, e := range ps.entries {
			wg.Add(1)
			go func() { defer wg.Done(); ps.record(e, nil, 0, Phases{}) }()
		}
		wg.Wait()
		if got := ps.published(); len(got) > publishBurst {
			t.Errorf("%d publications at once for %d results; want at most %d, the rest folded into one due later", len(got), n, publishBurst)
		}
		synctest.Wait()
		advance(publishGapMax)
		pubs := ps.published()
		if len(pubs) > publishBurst+1 {
			t.Errorf("%d publications for a burst of %d results; want at most %d", len(pubs), n, publishBurst+1)
		}
		if got := ps.Snapshot().Len(); got != n {
			t.Fatalf("after the burst the snapshot holds %d checks; want %d", got, n)
		}
		if last := pubs[len(pubs)-1].Sub(pubs[0]); last > publishGapMax {
			t.Errorf("the burst's last result published %v after its first; want within %v", last, publishGapMax)
		}

		advance(time.Minute) // quiet: the allowance is whole again
		t0 := time.Now()
		ps.record(ps.entries[7], errFail, 0, Phases{})
		if !ps.Snapshot().Status(ps.entries[7].spec.Fingerprint()).Down {
			t.Fatal("a single flip after a quiet minute was not published when its result was recorded")
		}
		if p := ps.published(); !p[len(p)-1].Equal(t0) {
			t.Errorf("the flip was published at %v; want at once (%v)", p[len(p)-1], t0)
		}
	})
}

// Under a sustained stream of changes (one every 100 µs for two seconds),
// publications come at most once a minimal gap (beyond the first few), and the
// last change waits at most one publication's charge to be published.
func TestPublishPacesSustainedChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20000
		ps := newPacedScheduler(t, n)
		start := time.Now()
		for _, e := range ps.entries {
			ps.record(e, errFail, 0, Phases{}) // down: a change each
			time.Sleep(100 * time.Microsecond) // fake time: the stream's pace
		}
		end := time.Now()
		advance(publishGapMax)
		pubs := ps.published()
		if most := publishBurst + int(end.Sub(start)/publishGapMin) + 1; len(pubs) > most {
			t.Errorf("%d publications over %v; want at most %d (one a %v gap)", len(pubs), end.Sub(start), most, publishGapMin)
		}
		for i := publishBurst + 1; i < len(pubs); i++ {
			if d := pubs[i].Sub(pubs[i-1]); d < publishGapMin {
				t.Errorf("publication %d came %v after the one before; want at least %v", i, d, publishGapMin)
			}
		}
		if d := pubs[len(pubs)-1].Sub(end); d > gapFor(n) {
			t.Errorf("the last change was published %v after it was recorded; want within a publication's charge, %v", d, gapFor(n))
		}
		snap := ps.Snapshot()
		down := 0
		snap.Each(func(_ string, st Status) {
			if st.Down {
				down++
			}
		})
		if down != n {
			t.Errorf("%d of %d checks down in the last snapshot", down, n)
		}
	})
}

// A publication's charge grows with the statuses it copies, within its bounds.
func TestPublishGapFollowsCopiedStatuses(t *testing.T) {
	for _, tc := range []struct {
		copied int
		want   time.Duration
	}{
		{0, publishGapMin},
		{1600, publishGapMin},
		{100000, 100000 * costPerStatus * publishCostShare},
		{10000000, publishGapMax},
	} {
		if got := gapFor(tc.copied); got != tc.want {
			t.Errorf("charge of a publication copying %d statuses: %v; want %v", tc.copied, got, tc.want)
		}
	}
}

// Stop publishes what waits for a publication due on timer, and leaves no timer.
func TestPublishStopFlushesPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		ps := newPacedScheduler(t, n)
		for _, e := range ps.entries {
			ps.record(e, nil, 0, Phases{})
		}
		if got := ps.Snapshot().Len(); got == n {
			t.Fatalf("all %d results published at once; the test needs some held for the gap", n)
		}
		ps.Stop()
		if got := ps.Snapshot().Len(); got != n {
			t.Errorf("after Stop the snapshot holds %d of %d checks", got, n)
		}
		ps.pace.mu.Lock()
		armed := ps.pace.armed
		ps.pace.mu.Unlock()
		if armed {
			t.Error("a publication is still due on timer after Stop")
		}
	})
}
