package fleet

import (
	"slices"
	"testing"
	"time"

	"github.com/healthroute/healthroute/health"
)

// TestPausedProbesRestartWindow: a report still without a verdict whose probes
// stopped for longer than its freshness bound (this member was no longer one of
// the check's checkers) has its threshold window restarted, once, so that the
// results counted before the pause do not complete a window with the next ones;
// and the pause is not taken for a gap between probes, which would keep the next
// reports fresh for 3 times the pause. (Found by the property test, seeds 28 and
// 36: a member placed on a check again gave a verdict of healthy from passes before
// an outage and one failure after.)
func TestPausedProbesRestartWindow(t *testing.T) {
	f, err := New(Config{Name: "self", Insecure: true, Quorum: DefaultQuorum})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	f.ran = now
	var restarted []string
	f.OnStale = func(fps []string) { restarted = append(restarted, fps...) }
	noVerdict := health.Status{Seen: true}
	for range 2 { // probed a second apart, no verdict yet: fresh for 5 s
		f.Local("fp", noVerdict)
		now = now.Add(time.Second)
	}
	for range 10 { // the probes stop; the fleet beats on
		now = now.Add(time.Second)
		f.tick()
		f.restartWindows()
	}
	if !slices.Equal(restarted, []string{"fp"}) {
		t.Fatalf("windows restarted: %v, want fp's once", restarted)
	}
	now = now.Add(30 * time.Second)
	f.Local("fp", noVerdict) // probed again, 41 s after the last probe
	if r := f.own[shortID("fp")]; r.gap != time.Second {
		t.Errorf("the gap between probes is %s after the pause, want the 1 s before it", r.gap)
	}
}
