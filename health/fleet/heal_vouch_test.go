package fleet

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestLapsedMemberVouchesAfterItsFullSet: a member back from a lapse (a partition
// on either side, a freeze) may hold newer reports than those held from it here;
// its heartbeats vouch for what is held only once its full report set arrived (or
// its digest matches): until then its old report (healthy, from before the lapse)
// does not count, and the pull of its full set goes out with the heal. (Found by
// the property test, seed 32 of a run of 100: after a partition healed, a member's
// beats kept a report from before the outage counted.)
func TestLapsedMemberVouchesAfterItsFullSet(t *testing.T) {
	now := time.Unix(1000, 0)
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
	f.ran = now
	f.alive["p"] = memberlist.Node{Name: "p"}
	id := shortID("fp")
	start, sent := now, uint64(0)
	send := func(typ byte, seq, digest uint64, es ...entry) {
		// p's clock runs as this one does (heardLocked reads arrivals against it).
		sent = max(sent+1, uint64(now.Sub(start).Milliseconds()))
		h := header{typ: typ, name: "p", epoch: 1, seq: seq, sentAt: sent}
		b := appendHeader(nil, h)
		switch typ {
		case msgBeat:
			b = appendUvarint(appendUint64(appendUint64(b, digest), uint64(now.UnixMilli())), 0)
		case msgState:
			b = appendUvarint(b, uint64(len(es)))
			for _, e := range es {
				b = appendEntry(b, e)
			}
		}
		f.handle(b, false)
	}
	send(msgState, 1, 0, entry{id: id, seq: 1}) // healthy
	send(msgBeat, 1, mix(id, 0))
	f.Status("fp", status(false))
	if v := f.View("fp"); v.Total != 1 || v.Healthy != 1 {
		t.Fatalf("before the lapse: %+v, want p's healthy report counted", v)
	}
	for range 7 { // p silent past the suspicion, as each beat notices
		now = now.Add(time.Second)
		f.mu.Lock()
		f.agePeersLocked(now)
		f.mu.Unlock()
	}
	for len(f.jobs) > 0 {
		<-f.jobs
	}
	send(msgBeat, 2, mix(id, flagDown)) // back; its report turned down meanwhile
	if v := f.View("fp"); v.Total != 0 {
		t.Errorf("back from the lapse, before its full set: %+v, want its old report not counted", v)
	}
	pulled := false
	for len(f.jobs) > 0 {
		if j := <-f.jobs; j.to == "p" && j.msg()[0] == msgPull {
			pulled = true
		}
	}
	if !pulled {
		t.Error("back from the lapse: no pull of its full set")
	}
	send(msgState, 2, 0, entry{id: id, flags: flagDown, seq: 2})
	send(msgBeat, 2, mix(id, flagDown))
	if v := f.View("fp"); v.Total != 1 || v.Healthy != 0 {
		t.Errorf("after its full set: %+v, want its report (down) counted", v)
	}
}
