package fleet

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/healthroute/healthroute/health"
)

// TestPausedProbesRestartWindow: a report still without a verdict whose probes
// stopped for longer than its freshness bound (this member was no longer one of
// the check's checkers) has its threshold window restarted, once, so that the
// results counted before the pause do not complete a window with the next ones.
// (Found by the property test, seed 36: a member placed on a check again gave a
// verdict of healthy from passes before an outage and one failure after.)
func TestPausedProbesRestartWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
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

// TestNotACheckerIsNoGap: the time a member was not one of a check's checkers is
// no gap between its probes. Counted as one, the next probes' reports stayed fresh
// for 3 times that time (freshFor), and when the member stopped probing again its
// heartbeats vouched for its last report that long: the property test's seed 28 saw
// another member count a healthy report 30 s into an outage.
func TestNotACheckerIsNoGap(t *testing.T) {
	now := time.Unix(1000, 0)
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
	f.ran = now
	f.alive["self"] = memberlist.Node{Name: "self"}
	f.meta["self"] = memberMeta{role: RoleBoth, hash: nameHash("self")}
	spec := &health.Spec{Name: "web", Target: "http://192.0.2.1/", Checkers: 1}
	fp := spec.Fingerprint()
	members := func(names ...string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for name := range f.alive {
			if name != "self" {
				delete(f.alive, name)
				delete(f.meta, name)
				delete(f.peers, name)
			}
		}
		for _, name := range names { // each a candidate: alive, heard from, probing
			f.alive[name] = memberlist.Node{Name: name}
			f.meta[name] = memberMeta{role: RoleBoth, hash: nameHash(name)}
			f.peers[name] = &peer{epoch: 1, fresh: true, heard: now, reports: map[uint64]report{}}
		}
		f.membersMovedLocked()
	}
	probe := func() {
		t.Helper()
		if !f.Probes(spec) {
			t.Fatal("self is not the check's checker")
		}
		f.Local(fp, health.Status{Seen: true, Verdict: true})
		now = now.Add(time.Second)
		f.ran = now // the fleet's loop runs every beat: no stall
	}
	probe()
	probe()
	// Another member takes the check for 15 s (the first name that ranks above self).
	var other string
	for i := 0; i < 100 && other == ""; i++ {
		members(fmt.Sprintf("m%d", i))
		if !f.Probes(spec) {
			other = fmt.Sprintf("m%d", i)
		}
	}
	if other == "" {
		t.Fatal("no member ranks above self")
	}
	for range 15 {
		if f.Probes(spec) {
			t.Fatalf("self probes with %s a member", other)
		}
		now = now.Add(time.Second)
		f.ran = now
	}
	members() // self is the checker again
	probe()
	probe()
	f.mu.Lock()
	gap, fresh := f.own[shortID(fp)].gap, f.freshFor(f.own[shortID(fp)])
	f.mu.Unlock()
	if gap > time.Second {
		t.Errorf("gap between probes %s after 15 s as no checker; want the 1 s between probes (fresh for %s)", gap, fresh)
	}
}
