package health

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recObserver records, in fake time since t0, when checks went down, the lags
// probes started with and the probes skipped for local errors.
type recObserver struct {
	mu      sync.Mutex
	t0      time.Time
	down    map[string]time.Duration
	maxLag  time.Duration
	late    int
	skipped map[string]int
	failed  map[string]int
}

func newRecObserver() *recObserver {
	return &recObserver{t0: time.Now(), down: map[string]time.Duration{}, skipped: map[string]int{}, failed: map[string]int{}}
}

func (o *recObserver) Started(_ *Spec, lag time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.maxLag = max(o.maxLag, lag)
	if lag >= LateAfter {
		o.late++
	}
}

func (o *recObserver) Probed(sp *Spec, err error, _ time.Duration) {
	if err != nil {
		o.mu.Lock()
		o.failed[sp.Name]++
		o.mu.Unlock()
	}
}

func (o *recObserver) Skipped(sp *Spec, _ error) {
	o.mu.Lock()
	o.skipped[sp.Name]++
	o.mu.Unlock()
}

func (o *recObserver) Changed(sp *Spec, down bool) {
	if down {
		o.mu.Lock()
		if _, ok := o.down[sp.Name]; !ok {
			o.down[sp.Name] = time.Since(o.t0)
		}
		o.mu.Unlock()
	}
}

// hungOrFailing returns checkers whose targets hang until the budget ends, but
// for checks named fail-*, which fail at once.
func hungOrFailing(sp *Spec) (Checker, error) {
	if strings.HasPrefix(sp.Name, "fail-") {
		return CheckFunc(func(context.Context) error { return errFail }), nil
	}
	return CheckFunc(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }), nil
}

// hungAndFailingSpecs is the configuration of issue "a hung target starves the
// others": hung checks plus 10 that fail at once, at the defaults (30 s interval,
// tcp's 10 s budget, 3 failures).
func hungAndFailingSpecs(hung int) (all, failing []*Spec) {
	for i := range hung {
		all = append(all, testSpec(fmt.Sprintf("hung-%d", i), 0, 0, 0))
	}
	for i := range 10 {
		sp := testSpec(fmt.Sprintf("fail-%d", i), 0, 0, 0)
		all, failing = append(all, sp), append(failing, sp)
	}
	return all, failing
}

// The acceptance bound: with the bound on probes in flight users get, checks whose
// targets fail at once go down within interval × threshold + timeout + 1 s, however
// many others hang.
func TestSchedulerHungTargetsDoNotStarveOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := newRecObserver()
		s := &Scheduler{NewChecker: hungOrFailing, Observer: obs}
		all, failing := hungAndFailingSpecs(1000)
		s.Acquire(all)
		s.Start(context.Background())
		defer s.Stop()
		bound := DefaultInterval*DefaultFails + TCPConnect + time.Second
		advance(bound)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		var slowest time.Duration
		for _, sp := range failing {
			d, ok := obs.down[sp.Name]
			if !ok {
				t.Errorf("check %s not down after %s; want down within it", sp.Name, bound)
			}
			slowest = max(slowest, d)
		}
		if obs.maxLag >= LateAfter || obs.late > 0 {
			t.Errorf("probes started up to %s late (%d late); want none delayed by %s", obs.maxLag, obs.late, LateAfter)
		}
		t.Logf("1000 hung + 10 failing, max_probes %d: failing checks down by %s (bound %s); max lag %s",
			s.MaxInFlightNow(), slowest, bound, obs.maxLag)
	})
}

// With max_probes set below what hung targets need, checks run late: the lag and
// the backlog show it. This is the configuration the issue measured (max_probes
// 50 of the 500 slots 1000 hung checks may need).
func TestSchedulerTooFewSlotsShowLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := newRecObserver()
		s := &Scheduler{MaxInFlight: 50, NewChecker: hungOrFailing, Observer: obs}
		all, failing := hungAndFailingSpecs(1000)
		s.Acquire(all)
		s.Start(context.Background())
		defer s.Stop()
		advance(DefaultInterval)
		if b := s.Backlog(); b < 500 {
			t.Errorf("backlog %d after one interval; want the hundreds of checks waiting for 50 slots", b)
		}
		if n := s.InFlight(); n != 50 {
			t.Errorf("%d probes in flight; want the bound, 50", n)
		}
		obs.mu.Lock()
		lag, late := obs.maxLag, obs.late
		obs.mu.Unlock()
		if lag < 10*time.Second || late == 0 {
			t.Errorf("max lag %s, %d late probes; want lags of tens of seconds reported", lag, late)
		}
		in, _ := s.Info(failing[0].Fingerprint())
		t.Logf("max_probes 50: max lag %s after %s, backlog %d; a failing check's last lag %s", lag, DefaultInterval, s.Backlog(), in.LastLag)
	})
}

func TestAutoMaxInFlight(t *testing.T) {
	tests := []struct {
		demand float64
		nofile uint64
		want   int
	}{
		{0, 0, MinMaxInFlight},
		{100, 0, MinMaxInFlight},
		{250, 0, 500},
		{250.2, 0, 501},
		{10000, 0, 20000},
		{10000, 1024, 512},
		{250, 1024, 500},
		{10000, 100, MinMaxInFlight / 4},
	}
	for _, tc := range tests {
		if got := AutoMaxInFlight(tc.demand, tc.nofile); got != tc.want {
			t.Errorf("AutoMaxInFlight(%v, %d) = %d; want %d", tc.demand, tc.nofile, got, tc.want)
		}
	}
}

// The automatic bound follows the checks held: 1000 tcp checks at the defaults
// (10 s budget, 30 s interval) may hold 250 slots, so get 500; releasing them
// brings it back to the minimum.
func TestSchedulerAutoBoundFollowsChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler{NewChecker: hungOrFailing}
		s.Start(context.Background())
		defer s.Stop()
		if n := s.MaxInFlightNow(); n != MinMaxInFlight {
			t.Errorf("bound %d with no checks; want %d", n, MinMaxInFlight)
		}
		all, _ := hungAndFailingSpecs(990)
		s.Acquire(all)
		want := AutoMaxInFlight(1000*0.25, nofileLimit())
		if n := s.MaxInFlightNow(); n != want {
			t.Errorf("bound %d with 1000 default tcp checks; want %d", n, want)
		}
		s.Release(all)
		if n := s.MaxInFlightNow(); n != MinMaxInFlight {
			t.Errorf("bound %d after releasing every check; want %d", n, MinMaxInFlight)
		}
	})
}

// SetMaxInFlight changes the bound under running probes: raised, waiting checks
// start at once; lowered, running probes finish and no new one starts until the
// count is below the new bound.
func TestSchedulerSetMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler{MaxInFlight: 2, NewChecker: hungOrFailing,
			Jitter: func(time.Duration) time.Duration { return 0 }}
		var specs []*Spec
		for i := range 10 {
			sp := testSpec(fmt.Sprintf("hung-%d", i), time.Minute, 1, 1)
			sp.Timeout = 10 * time.Second
			specs = append(specs, sp)
		}
		s.Acquire(specs)
		s.Start(context.Background())
		defer s.Stop()
		advance(time.Millisecond)
		if n, b := s.InFlight(), s.Backlog(); n != 2 || b != 8 {
			t.Fatalf("%d in flight, %d waiting; want 2 and 8", n, b)
		}
		s.SetMaxInFlight(6)
		synctest.Wait()
		if n, b := s.InFlight(), s.Backlog(); n != 6 || b != 4 {
			t.Fatalf("after raising the bound to 6: %d in flight, %d waiting; want 6 and 4", n, b)
		}
		s.SetMaxInFlight(1)
		advance(time.Second)
		if n := s.InFlight(); n != 6 {
			t.Errorf("lowering the bound stopped running probes: %d in flight; want the 6 to finish", n)
		}
		advance(10 * time.Second) // the 6 probes' budget ends; one slot remains
		if n, b := s.InFlight(), s.Backlog(); n != 1 || b != 3 {
			t.Errorf("after the running probes ended: %d in flight, %d waiting; want 1 and 3", n, b)
		}
		s.SetMaxInFlight(0)
		if n := s.MaxInFlightNow(); n != AutoMaxInFlight(0, nofileLimit()) {
			t.Errorf("SetMaxInFlight(0): bound %d; want the automatic one", n)
		}
	})
}

// A waiting check released (or stopped) leaves the line and never takes a slot.
func TestSchedulerReleaseWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler{MaxInFlight: 1, NewChecker: hungOrFailing,
			Jitter: func(time.Duration) time.Duration { return 0 }}
		a, b := testSpec("hung-a", time.Minute, 1, 1), testSpec("hung-b", time.Minute, 1, 1)
		s.Acquire([]*Spec{a, b})
		s.Start(context.Background())
		defer s.Stop()
		advance(time.Millisecond)
		if n := s.Backlog(); n != 1 {
			t.Fatalf("backlog %d; want the second check waiting", n)
		}
		s.Release([]*Spec{a, b})
		if n, w := s.InFlight(), s.Backlog(); n != 0 || w != 0 {
			t.Errorf("after releasing both: %d in flight, %d waiting; want none", n, w)
		}
	})
}

// A slow publication (a subscriber compiling a large table) does not push back the
// next probe: it is due one interval after the last one ended.
func TestSchedulerSlowPublicationKeepsCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		fail := false
		var plog *probeLog
		s := &Scheduler{
			Jitter: func(time.Duration) time.Duration { return 0 },
			NewChecker: func(sp *Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error {
					plog.add(sp.Name)
					mu.Lock()
					defer mu.Unlock()
					fail = !fail // a change each probe: each one publishes
					if fail {
						return errFail
					}
					return nil
				}), nil
			},
		}
		defer s.Subscribe(func(*Snapshot) { time.Sleep(4 * time.Second) })() // called at once, too
		plog = newProbeLog()
		s.Acquire([]*Spec{testSpec("a", 10*time.Second, 1, 1)})
		s.Start(context.Background())
		defer s.Stop()
		advance(30*time.Second + time.Millisecond)
		want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second}
		if got := plog.get("a"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("probes started at %v; want %v, whatever publishing takes", got, want)
		}
	})
}
