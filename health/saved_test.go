package health

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A check restored from a saved state answers from it before its first probe, needs
// a full run of passes to recover, and is saved again with its new judgement.
func TestRestoredStateHoldsUntilProbesOverturnIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var up atomic.Bool
		up.Store(true)
		s := &Scheduler{Jitter: func(time.Duration) time.Duration { return time.Second },
			NewChecker: func(*Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error {
					if up.Load() {
						return nil
					}
					return errFail
				}), nil
			}}
		down := testSpec("down", 10*time.Second, 3, 3)
		stale := testSpec("stale", 10*time.Second, 3, 3)
		since := time.Now().Add(-time.Hour)
		s.Restore(map[string]Saved{
			down.Fingerprint():  {Down: true, Since: since, Judged: time.Now().Add(-time.Minute)},
			stale.Fingerprint(): {Down: true, Since: since, Judged: time.Now().Add(-time.Hour)},
		}, 5*time.Minute, time.Now())
		s.Acquire([]*Spec{down, stale})
		s.Start(context.Background())
		defer s.Stop()

		snap := s.Snapshot()
		if st := snap.Status(down.Fingerprint()); !st.Down || !st.Seen || !st.Since.Equal(since) {
			t.Fatalf("before any probe, the restored check reads %+v; want down since %v", st, since)
		}
		if st := snap.Status(stale.Fingerprint()); st.Down {
			t.Fatalf("a state judged an hour ago was used (%+v); a check whose saved state is stale starts as new", st)
		}
		if got := s.Judged(); len(got) != 1 || !got[down.Fingerprint()].Down {
			t.Fatalf("Judged() = %v; want the restored check alone, down", got)
		}

		advance(time.Second + 20*time.Second) // probes at 1 s, 11 s, 21 s: three passes
		if st := s.Snapshot().Status(down.Fingerprint()); st.Down {
			t.Fatalf("after three passing probes the restored check is still down")
		}
		j := s.Judged()
		if got := j[down.Fingerprint()]; got.Down || !got.Judged.Equal(time.Now()) {
			t.Fatalf("Judged()[down] = %+v; want up, judged now (%v)", got, time.Now())
		}
		if _, ok := j[stale.Fingerprint()]; !ok {
			t.Fatalf("the check that started as new has no judged state after a full window: %v", j)
		}
	})
}

// The first probe of a restored check counts toward a flip, as if its own probes
// had judged it: one pass of three does not bring it back. Its report to an
// aggregator says the state is restored, not a verdict: in a fleet it is this
// member's own answer, never a report the others count, until a full threshold
// window of this process's probes (3 passes here) gives a verdict.
func TestRestoredStateIsNoVerdictForOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agg := &verdictLog{}
		s := &Scheduler{Aggregator: agg, Jitter: func(time.Duration) time.Duration { return time.Second },
			NewChecker: func(*Spec) (Checker, error) { return CheckFunc(func(context.Context) error { return nil }), nil }}
		sp := testSpec("restored", 10*time.Second, 3, 3)
		s.Restore(map[string]Saved{sp.Fingerprint(): {Down: true, Judged: time.Now()}}, 5*time.Minute, time.Now())
		s.Acquire([]*Spec{sp})
		s.Start(context.Background())
		defer s.Stop()
		advance(time.Second)
		in, _ := s.Info(sp.Fingerprint())
		if !in.State.Down || in.State.Run() != 1 {
			t.Fatalf("after one pass the restored check is %+v; want still down, one pass counted", in.State)
		}
		if got := agg.take(); len(got) != 1 || got[0].Verdict || !got[0].Restored || !got[0].Down {
			t.Fatalf("the first report of a restored check: %+v; want down, restored, no verdict", got)
		}
		advance(20 * time.Second) // passes 2 and 3: a verdict of this process's probes
		got := agg.take()
		if len(got) != 2 || !got[1].Verdict || got[1].Restored || got[1].Down {
			t.Fatalf("after a full window of passes: %+v; want a verdict of healthy, no longer restored", got)
		}
	})
}
