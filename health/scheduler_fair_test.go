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
	if lag >= lateAfter {
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
		if w := s.LongestWait(); w != 0 {
			t.Errorf("a check has waited %s for a slot; want none waiting", w)
		}
		if obs.maxLag >= lateAfter || obs.late > 0 {
			t.Errorf("probes started up to %s late (%d late); want none delayed by %s", obs.maxLag, obs.late, lateAfter)
		}
		t.Logf("1000 hung + 10 failing, max_probes %d: failing checks down by %s (bound %s); max lag %s",
			s.MaxInFlightNow(), slowest, bound, obs.maxLag)

		// The hung ones go down too, each probe taking its whole budget.
		obs.mu.Unlock()
		hungBound := (DefaultInterval+TCPConnect)*DefaultFails + time.Second
		advance(hungBound - bound)
		obs.mu.Lock()
		if n := len(obs.down) - len(failing); n != 1000 {
			t.Errorf("%d of 1000 hung checks down after %s; want all", n, hungBound)
		}
	})
}

// With max_probes set below what hung targets need (50 of the 505 slots 1000 hung
// checks may need, as the issue measured), hung checks run late and the lag and
// the backlog show it. A check whose target fails at once waits in due order for
// its first probe (nothing tells it from a hung one yet), then ahead of the hung
// ones, for no more than the first slot to free (at most a hung probe's budget):
// it goes down within (interval + timeout) × (threshold - 1) + 1 s of that first
// probe, where in due order each of its probes would wait for a round of 1000.
func TestSchedulerTooFewSlotsShowLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := newRecObserver()
		first := map[string]time.Duration{}
		var mu sync.Mutex
		t0 := time.Now()
		s := &Scheduler{MaxInFlight: 50, Observer: obs, NewChecker: func(sp *Spec) (Checker, error) {
			c, _ := hungOrFailing(sp)
			return CheckFunc(func(ctx context.Context) error {
				mu.Lock()
				if _, ok := first[sp.Name]; !ok {
					first[sp.Name] = time.Since(t0)
				}
				mu.Unlock()
				return c.Check(ctx)
			}), nil
		}}
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
		if w := s.LongestWait(); w < 10*time.Second || w > DefaultInterval {
			t.Errorf("longest wait %s after one interval; want the tens of seconds the first checks due have waited", w)
		}
		obs.mu.Lock()
		lag, late := obs.maxLag, obs.late
		obs.mu.Unlock()
		if lag < 10*time.Second || late == 0 {
			t.Errorf("max lag %s, %d late probes; want lags of tens of seconds reported", lag, late)
		}
		// A round of first probes, 1010 at 10 s each through 50 slots, then the
		// bound for the last one probed.
		advance(1010*TCPConnect/50 + (DefaultInterval+TCPConnect)*(DefaultFails-1) + 2*time.Second - DefaultInterval)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		var slowest, slowestFirst time.Duration
		for _, sp := range failing {
			d, ok := obs.down[sp.Name]
			f := first[sp.Name]
			if bound := f + (DefaultInterval+TCPConnect)*(DefaultFails-1) + time.Second; !ok || d > bound {
				t.Errorf("check %s probed first at %s, down at %s (seen: %v); want down by %s", sp.Name, f, d, ok, bound)
			}
			slowest, slowestFirst = max(slowest, d), max(slowestFirst, f)
		}
		t.Logf("max_probes 50: backlog %d; failing checks first probed by %s, down by %s; %d of 1000 hung checks down",
			s.Backlog(), slowestFirst, slowest, len(obs.down)-len(failing))
	})
}

// The limiter grants waiting probes by key (due time plus CostWeight times the
// previous probe's duration), ties by arrival, and a waiter whose context ends
// leaves the line.
func TestLimiterOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &limiter{limit: 1}
		if err := l.acquire(context.Background(), time.Time{}, time.Time{}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		var mu sync.Mutex
		var order []string
		ctx, cancel := context.WithCancel(context.Background())
		for _, w := range []struct {
			name string
			key  time.Time
			ctx  context.Context
		}{
			{"hung, due first", waitKey(t0, TCPConnect), context.Background()},
			{"quick", waitKey(t0.Add(time.Second), time.Millisecond), context.Background()},
			{"new", waitKey(t0.Add(2*time.Second), 0), context.Background()},
			{"cancelled", waitKey(t0, 0), ctx},
			{"quick, same key", waitKey(t0.Add(time.Second), time.Millisecond), context.Background()},
		} {
			go func() {
				if w.ctx.Err() == nil && l.acquire(w.ctx, t0, w.key) == nil {
					mu.Lock()
					order = append(order, w.name)
					mu.Unlock()
					time.Sleep(time.Second)
					l.release()
				}
			}()
			synctest.Wait() // queued in this order
		}
		cancel()
		synctest.Wait()
		if n := l.waiting(); n != 4 {
			t.Fatalf("%d waiting after one left; want 4", n)
		}
		l.release()
		time.Sleep(10 * time.Second)
		want := "[quick quick, same key new hung, due first]"
		mu.Lock()
		got := fmt.Sprint(order)
		mu.Unlock()
		if got != want {
			t.Errorf("granted %s; want %s", got, want)
		}
		if n := l.inUse(); n != 0 {
			t.Errorf("%d slots in use after every waiter released; want 0", n)
		}
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

// The scheduler's repeated warnings go out at most once per logEvery and kind, the
// line saying how many events it covers.
func TestSchedulerWarningsOncePerMinute(t *testing.T) {
	var s Scheduler
	l := s.limitedLogs()
	t0 := time.Unix(1e9, 0)
	if ok, held := l.Allow("late", t0); !ok || held.Count+1 != 1 {
		t.Fatalf("first event: %v, covering %d; want logged, covering 1", ok, held.Count+1)
	}
	for i := range 100 {
		if ok, _ := l.Allow("late", t0.Add(time.Duration(i)*time.Millisecond)); ok {
			t.Fatalf("event %d within %s of the last line was logged", i, logEvery)
		}
	}
	if ok, _ := l.Allow("local", t0); !ok {
		t.Fatal("the first local-resource event was held behind late probes")
	}
	if ok, held := l.Allow("late", t0.Add(logEvery)); !ok || held.Count+1 != 101 {
		t.Fatalf("event after %s: %v, covering %d; want logged, covering the 101 since the last line", logEvery, ok, held.Count+1)
	}
}
