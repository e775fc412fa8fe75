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
// results counted before the pause do not complete a window with the next ones.
// (Found by the property test, seed 36: a member placed on a check again gave a
// verdict of healthy from passes before an outage and one failure after.)
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
}
