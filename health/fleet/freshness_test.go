package fleet

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestWakeVoidsEarlierReports: a member's message with a higher wake count (it
// resumed from a stall) stops every report held from it from counting and asks it
// for its full set; messages with a lower one (sent before the stall) are ignored;
// a full set under the new count makes its reports count again.
func TestWakeVoidsEarlierReports(t *testing.T) {
	now := time.Unix(1000, 0)
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
	f.Local("fp", status(true))
	f.alive["p"] = memberlist.Node{Name: "p"}
	id := shortID("fp")
	send := func(typ byte, wake, sentAt uint64, body func([]byte) []byte) {
		h := header{typ: typ, name: "p", epoch: 7, seq: 1, sentAt: sentAt, wake: wake}
		f.handle(body(appendHeader(nil, h)), false)
	}
	delta := func(wake, sentAt uint64, flags byte) {
		send(msgDelta, wake, sentAt, func(b []byte) []byte { return appendEntry(b, entry{id: id, flags: flags, seq: 1}) })
	}
	beat := func(wake, sentAt uint64) {
		send(msgBeat, wake, sentAt, func(b []byte) []byte {
			return appendUvarint(appendUint64(appendUint64(b, mix(id, 0)), uint64(time.Now().UnixMilli())), 0)
		})
	}
	delta(0, 10, 0)
	beat(0, 10)
	if v := f.View("fp"); v.Total != 2 || v.Healthy != 1 {
		t.Fatalf("before the stall: %+v, want p's healthy report counted", v)
	}
	before := staleCount("p")
	beat(1, 20_000) // p resumed from a stall
	if v := f.View("fp"); v.Total != 1 {
		t.Fatalf("after p's wake: %+v, want its earlier report not counted", v)
	}
	if got := staleCount("p") - before; got != 1 {
		t.Errorf("stale reports of p counted %v, want 1", got)
	}
	select {
	case j := <-f.jobs:
		if j.to != "p" || j.msg()[0] != msgPull {
			t.Errorf("after p's wake: a job to %s of type %d, want a pull from p", j.to, j.msg()[0])
		}
	default:
		t.Error("after p's wake: no pull of its full set")
	}
	delta(0, 15, 0) // sent before the stall, delivered after
	if v := f.View("fp"); v.Total != 1 {
		t.Fatalf("a message from before p's stall counted: %+v", v)
	}
	send(msgState, 1, 20_010, func(b []byte) []byte {
		return appendEntry(appendUvarint(b, 1), entry{id: id, flags: flagDown, seq: 2})
	})
	if v := f.View("fp"); v.Total != 2 || v.Healthy != 0 {
		t.Fatalf("after p's full set under its new wake count: %+v, want its report (down) counted", v)
	}
}

// TestStallMarksOwnReports: a member that did not run for longer than 2 beats
// marks, before it sends anything, its reports whose probe is older than their
// bound as having no verdict, raises its wake count, and hands their checks to
// OnStale; a verdict it is told before OnStale has run does not bring them back.
func TestStallMarksOwnReports(t *testing.T) {
	now := time.Unix(1000, 0)
	f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum}, &now)
	var restarted []string
	f.OnStale = func(fps []string) { restarted = append(restarted, fps...) }
	for range 3 {
		f.Local("fp-1s", status(false))
		now = now.Add(time.Second)
	}
	f.Local("fp-30s", status(false))
	f.own[shortID("fp-30s")].gap = 30 * time.Second // probed every 30 s: fresh for 92 s
	now = now.Add(20 * time.Second)                 // frozen
	r := reader{b: f.stateMsg()}
	h := r.header()
	es := r.entries()
	if r.err != nil || h.wake != 1 {
		t.Fatalf("the first message after the stall: wake %d, err %v; want wake 1", h.wake, r.err)
	}
	for _, e := range es {
		pending := e.flags&flagPending != 0
		if want := e.id == shortID("fp-1s"); pending != want {
			t.Errorf("report %x: no verdict %t, want %t (only the check probed every second is stale)", e.id, pending, want)
		}
	}
	f.Local("fp-1s", status(false)) // a verdict computed before the window restarted
	if v := f.View("fp-1s"); v.Total != 0 || !v.Reports[0].Pending {
		t.Fatalf("before OnStale ran: %+v, want the report still without a verdict", v)
	}
	f.restartWindows()
	if len(restarted) != 1 || restarted[0] != "fp-1s" {
		t.Fatalf("OnStale got %v, want [fp-1s]", restarted)
	}
	f.Local("fp-1s", status(false)) // a verdict after the window restarted and completed
	if v := f.View("fp-1s"); v.Total != 1 {
		t.Fatalf("after a new verdict: %+v, want the report counted", v)
	}
}
