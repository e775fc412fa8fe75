package health

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// placer is an Aggregator that places checks on this instance while here is set.
type placer struct {
	flipAggregator
	mu   sync.Mutex
	here bool
	asks int
}

func (p *placer) Probes(*Spec) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asks++
	return p.here
}

func (p *placer) set(here bool) { p.mu.Lock(); p.here = here; p.mu.Unlock() }

// TestSchedulerProbesOnlyWherePlaced: a check placed elsewhere is not probed (the
// placer is asked each interval); once placed here, its probes start within one
// interval, and stop again when it is placed elsewhere.
func TestSchedulerProbesOnlyWherePlaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int64
		pl := &placer{}
		s := &Scheduler{
			Aggregator: pl,
			Jitter:     func(time.Duration) time.Duration { return 0 },
			NewChecker: func(*Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error { probes.Add(1); return nil }), nil
			},
		}
		s.Acquire([]*Spec{testSpec("a", time.Second, 1, 1)})
		s.Start(context.Background())
		defer s.Stop()
		advance(5*time.Second + time.Millisecond)
		pl.mu.Lock()
		asks := pl.asks
		pl.mu.Unlock()
		if n := probes.Load(); n != 0 || asks != 6 {
			t.Fatalf("placed elsewhere: %d probes, %d asks in 5 s; want none, and 6 asks", n, asks)
		}
		pl.set(true)
		advance(time.Second)
		if n := probes.Load(); n != 1 {
			t.Fatalf("placed here: %d probes within an interval, want 1", n)
		}
		advance(3 * time.Second)
		if n := probes.Load(); n != 4 {
			t.Fatalf("placed here: %d probes after 4 intervals, want 4", n)
		}
		pl.set(false)
		advance(3 * time.Second)
		if n := probes.Load(); n != 4 {
			t.Errorf("placed elsewhere again: %d probes, want still 4", n)
		}
	})
}

// TestSchedulerReplaceProbesAtOnce: a check placed here while its next ask is far
// off (interval 30 s) is probed as soon as Replace says placement may have moved;
// a Replace while it is probed here changes nothing of its schedule.
func TestSchedulerReplaceProbesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int64
		pl := &placer{}
		s := &Scheduler{
			Aggregator: pl,
			Jitter:     func(time.Duration) time.Duration { return 0 },
			NewChecker: func(*Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error { probes.Add(1); return nil }), nil
			},
		}
		s.Acquire([]*Spec{testSpec("a", 30*time.Second, 1, 1)})
		s.Start(context.Background())
		defer s.Stop()
		advance(time.Second)
		pl.set(true)
		s.Replace()
		advance(time.Millisecond)
		if n := probes.Load(); n != 1 {
			t.Fatalf("after Replace placed it here: %d probes, want 1 at once", n)
		}
		s.Replace()
		advance(29 * time.Second)
		if n := probes.Load(); n != 1 {
			t.Fatalf("a Replace while probed here: %d probes before the interval ran out, want 1", n)
		}
		advance(time.Second)
		if n := probes.Load(); n != 2 {
			t.Errorf("%d probes after one interval, want 2", n)
		}
	})
}
