package health

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestProbeUnderWayAtRestartNotCounted: a probe that started before its check's
// threshold window restarted (the process stalled while it ran: its answer is as
// old as the stall) does not count in the new window. Here it passes, then two
// probes after the restart fail: counted, it would make a window of three and a
// verdict of healthy from a pre-stall result; not counted, there is no verdict
// until the third failure after the restart, which is a verdict of down.
func TestProbeUnderWayAtRestartNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing, hang atomic.Bool
		release := make(chan struct{})
		agg := &verdictLog{}
		s, spec := verdictScheduler(agg, func() error {
			if hang.Load() {
				<-release // the answer was there before the stall
				return nil
			}
			if failing.Load() {
				return errors.New("down")
			}
			return nil
		})
		defer s.Stop()
		advance(2500 * time.Millisecond) // probes at 0, 1 and 2 s: a verdict, healthy
		if got := agg.take(); len(got) != 3 || !got[2].Verdict || got[2].Down {
			t.Fatalf("first window: %+v, want a verdict of healthy", got)
		}
		hang.Store(true)
		advance(time.Second) // the probe at 3 s is under way
		s.RestartWindows([]string{spec.Fingerprint()})
		hang.Store(false)
		failing.Store(true)
		close(release)
		synctest.Wait()
		advance(2 * time.Second) // two failures after the restart
		got := agg.take()
		if len(got) != 3 {
			t.Fatalf("around the restart: %+v, want 3 statuses", got)
		}
		for _, st := range got {
			if st.Verdict {
				t.Fatalf("around the restart: %+v, want no verdict: the probe under way at the restart does not count", got)
			}
		}
		advance(time.Second) // the third failure since the restart
		if got := agg.take(); len(got) != 1 || !got[0].Verdict || !got[0].Down {
			t.Fatalf("after a full window of failures: %+v, want a verdict of down", got)
		}
	})
}
