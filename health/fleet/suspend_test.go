package fleet

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestHostSuspendIsAStall: a suspend of the whole host, which the monotonic clock
// does not count (the fleet's clock moves 100 ms while the host sleeps 30 s), is a
// stall all the same: this member's report loses its verdict (its window
// restarts), its wake count goes up, and the other member's report, not heard from
// for 30 s, no longer counts here; the send times its messages carry count the
// suspend. A suspend shorter than half a beat is not one.
func TestHostSuspendIsAStall(t *testing.T) {
	now := time.Unix(1000, 0)
	var slept time.Duration
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
	f.suspended, f.slept, f.ran, f.start = func() time.Duration { return slept }, 0, now, now
	f.alive["p"] = memberlist.Node{Name: "p"}
	id := shortID("fp")
	for seq := range uint64(2) { // probed a second apart: fresh for 5 s
		f.Local("fp", status(false))
		feed(f, "p", 1, seq+1, entry{id: id, seq: seq + 1})
		now = now.Add(time.Second)
	}
	if v := f.View("fp"); v.Total != 2 {
		t.Fatalf("before the suspend: %+v, want both reports counted", v)
	}
	slept += 200 * time.Millisecond // shorter than half a beat
	now = now.Add(100 * time.Millisecond)
	f.running()
	if v := f.View("fp"); v.Total != 2 || f.wake != 0 {
		t.Fatalf("after 200 ms asleep: %+v, wake %d; want both reports counted, no stall", v, f.wake)
	}
	sentAt := f.mono(now)
	slept += 30 * time.Second
	now = now.Add(100 * time.Millisecond)
	f.running()
	if f.wake != 1 {
		t.Errorf("after 30 s asleep: wake count %d, want 1", f.wake)
	}
	// The send times its messages carry count the suspend: the others read their
	// arrivals against them (heardLocked).
	if got := f.mono(now) - sentAt; got != 30_100 {
		t.Errorf("after 30 s asleep and 100 ms awake: messages sent %d ms later, want 30100", got)
	}
	if _, restarting := f.restart[id]; !restarting || f.own[id].flags&flagPending == 0 {
		t.Errorf("after 30 s asleep: own report %+v, want no verdict and its window restarting", f.own[id])
	}
	if v := f.View("fp"); v.Total != 0 {
		t.Errorf("after 30 s asleep: %+v, want nothing counted (own report without a verdict, the other's unheard for 30 s)", v)
	}
}
