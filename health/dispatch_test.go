package health

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestSchedulerIdleChecksHoldNoGoroutine: checks waiting for their next probe hold
// no goroutine (the scheduler's dispatcher is one for them all), every check is
// still probed once an interval, and releasing them leaves no goroutine behind.
func TestSchedulerIdleChecksHoldNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const checks = 500
		var probes, started atomic.Int64
		s := &Scheduler{
			// First probes spread strictly inside the first interval, so that
			// exactly one probe of each falls in it.
			Jitter: func(interval time.Duration) time.Duration {
				return time.Duration(started.Add(1)) * interval / (checks + 1)
			},
			NewChecker: func(*Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error { probes.Add(1); return nil }), nil
			},
		}
		specs := make([]*Spec, checks)
		for i := range specs {
			specs[i] = testSpec(fmt.Sprint(i), 10*time.Second, 1, 1)
		}
		before := bubbleGoroutines(t)
		s.Start(context.Background())
		defer s.Stop()
		s.Acquire(specs)
		synctest.Wait()
		if n := bubbleGoroutines(t) - before; n != 1 {
			t.Errorf("%d checks scheduled: %d more goroutines; want the dispatcher alone", checks, n)
		}
		advance(10 * time.Second)
		if n := probes.Load(); n != checks {
			t.Errorf("after one interval: %d probes; want one each of %d checks", n, checks)
		}
		if n := bubbleGoroutines(t) - before; n > 2 {
			t.Errorf("between probes: %d more goroutines; want the dispatcher alone", n)
		}
		s.Release(specs)
		if n := s.running(); n != 0 {
			t.Errorf("%d checks after releasing all", n)
		}
	})
}

// Probe goroutines outlive their probe by at most probeWorkerIdle: ten probes
// running at once leave ten goroutines, which take the next turns and, once no
// probe is due for probeWorkerIdle, exit, leaving the dispatcher alone.
func TestSchedulerProbeGoroutinesRetire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const checks = 10
		var probes atomic.Int64
		s := &Scheduler{
			Jitter: func(time.Duration) time.Duration { return 0 },
			NewChecker: func(*Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error {
					probes.Add(1)
					time.Sleep(100 * time.Millisecond) // fake time: the probes overlap
					return nil
				}), nil
			},
		}
		specs := make([]*Spec, checks)
		for i := range specs {
			specs[i] = testSpec(fmt.Sprint(i), 10*time.Second, 1, 1)
		}
		before := bubbleGoroutines(t)
		s.Start(context.Background())
		defer s.Stop()
		s.Acquire(specs)
		advance(50 * time.Millisecond)
		if n := bubbleGoroutines(t) - before; n != checks+1 {
			t.Errorf("%d probes under way: %d more goroutines; want the dispatcher and one a probe", checks, n)
		}
		advance(100*time.Millisecond + probeWorkerIdle)
		if n := bubbleGoroutines(t) - before; n != 1 {
			t.Errorf("%v after the last probe: %d more goroutines; want the dispatcher alone", probeWorkerIdle, n)
		}
		advance(10 * time.Second)
		if n := probes.Load(); n != 2*checks {
			t.Errorf("after two intervals: %d probes; want two each of %d checks", n, checks)
		}
	})
}
