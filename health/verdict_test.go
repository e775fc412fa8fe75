package health

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// verdictLog keeps the statuses a Scheduler tells its Aggregator, in order.
type verdictLog struct {
	mu  sync.Mutex
	got []Status
}

func (l *verdictLog) Local(_ string, st Status) {
	l.mu.Lock()
	l.got = append(l.got, st)
	l.mu.Unlock()
}
func (l *verdictLog) Status(_ string, st Status) Status { return st }

// take returns the statuses told since the last take.
func (l *verdictLog) take() []Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = nil
	return out
}

// verdictScheduler starts a scheduler telling agg the statuses of one check
// (interval 1 s, thresholds 3) whose probes run check, first at once.
func verdictScheduler(agg *verdictLog, check func() error) (*Scheduler, *Spec) {
	s := &Scheduler{
		Aggregator: agg,
		Jitter:     func(time.Duration) time.Duration { return 0 },
		NewChecker: func(*Spec) (Checker, error) {
			return CheckFunc(func(context.Context) error { return check() }), nil
		},
	}
	spec := testSpec("a", time.Second, 3, 3)
	s.Acquire([]*Spec{spec})
	s.Start(context.Background())
	return s, spec
}

// TestVerdictAfterThresholdWindow: a check's statuses carry a Verdict once
// failure_threshold results were counted (before, the state is a new check's
// default), and again only after as many more once RestartWindows restarted its
// window; a flip after the restart needs a full threshold of new results, whatever
// ran up before it.
func TestVerdictAfterThresholdWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Bool
		agg := &verdictLog{}
		s, spec := verdictScheduler(agg, func() error {
			if failing.Load() {
				return errors.New("down")
			}
			return nil
		})
		defer s.Stop()
		advance(2500 * time.Millisecond) // probes at 0, 1 and 2 s
		got := agg.take()
		if len(got) != 3 || got[0].Verdict || got[1].Verdict || !got[2].Verdict || got[2].Down {
			t.Fatalf("first window: %+v, want verdicts false, false, true (healthy)", got)
		}
		failing.Store(true)
		advance(2 * time.Second) // two failures: run 2 of 3
		s.RestartWindows([]string{spec.Fingerprint()})
		advance(2 * time.Second) // two more failures, after the restart
		got = agg.take()
		if len(got) != 4 || !got[0].Verdict || !got[1].Verdict || got[2].Verdict || got[3].Verdict || got[3].Down {
			t.Fatalf("around the restart: %+v, want two verdicts (healthy), then none, still healthy", got)
		}
		advance(time.Second) // the third failure since the restart flips it
		got = agg.take()
		if len(got) != 1 || !got[0].Verdict || !got[0].Down {
			t.Fatalf("after a full window of failures: %+v, want a verdict of down", got)
		}
	})
}
