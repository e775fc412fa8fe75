package fleet

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestLateBeatHeardABeatAfterItsSending: a member's beat that arrives seconds after
// it was sent (relayed late: it waited in the relays' gossip queues behind fresher
// messages), here after the member crashed, counts as heard a beat after it was
// sent (when the member's next beat was due), read on the member's clock from the
// quickest of its earlier messages, not when it arrived: the member stops counting
// a suspicion after that, about when it did on the members that got the beat in
// time. A beat that arrives within a beat of its sending is heard when it arrives.
// (Found by TestSimulationPlacementFakeClock: heard when it arrived, such a beat
// kept a member that had crashed 4.6 s before a candidate on one member for another
// suspicion, and the fleet took 11 s to agree on new checkers instead of 6-7 s.)
func TestLateBeatHeardABeatAfterItsSending(t *testing.T) {
	now := time.Unix(1000, 0)
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
	f.alive["p"] = memberlist.Node{Name: "p"}
	start := now
	// beat hands over p's beat sent at start+sent (p's clock runs as this one
	// does), arriving after transit.
	beat := func(sent, transit time.Duration) {
		now = start.Add(sent + transit)
		h := header{typ: msgBeat, name: "p", epoch: 1, seq: 1, sentAt: uint64(sent.Milliseconds()) + 1}
		f.handle(beatOf(h, 0), false)
	}
	fresh := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.freshLocked("p", f.peers["p"], now)
	}
	for i, d := range []time.Duration{900 * time.Millisecond, 300 * time.Millisecond, 1200 * time.Millisecond, 700 * time.Millisecond} {
		beat(time.Duration(i)*time.Second, d)
		if got := lastHeard(f, "p"); !got.Equal(now) {
			t.Errorf("beat %d, %s in transit (the quickest 300 ms): heard at %s, want %s (its arrival)", i, d, got.Sub(start), now.Sub(start))
		}
	}
	// p crashes after its beat at 4 s, which arrives here 4.5 s later.
	beat(4*time.Second, 4500*time.Millisecond)
	if got, want := lastHeard(f, "p"), start.Add(5300*time.Millisecond); !got.Equal(want) {
		t.Errorf("a beat arriving 4.5 s late: heard at %s, want %s (sent at 4 s as read with the quickest transit, 300 ms, and a beat)", got.Sub(start), want.Sub(start))
	}
	now = start.Add(10400 * time.Millisecond) // 1.9 s after it arrived
	if fresh() {
		t.Error("p counts 5.1 s after it was last heard, because its last beat arrived late")
	}
	// The next beat on time is heard when it arrives.
	beat(11*time.Second, 800*time.Millisecond)
	if got := lastHeard(f, "p"); !got.Equal(now) || !fresh() {
		t.Errorf("a beat on time: heard at %s (fresh %t), want %s", got.Sub(start), fresh(), now.Sub(start))
	}
}
