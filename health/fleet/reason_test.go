package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/memberlist"
)

// reasonOf returns member's last failure reason of fp in m's view, and whether m
// holds a report of member's.
func reasonOf(m *Fleet, fp, member string) (string, bool) {
	for _, r := range m.View(fp).Reports {
		if r.Member == member {
			return r.Reason, true
		}
	}
	return "", false
}

func TestShortReason(t *testing.T) {
	if got := shortReason("connection refused"); got != "connection refused" {
		t.Errorf("a short reason changed: %q", got)
	}
	long := strings.Repeat("é", 100) // 200 bytes, 2 a character
	got := shortReason(long)
	if len(got) > MaxReason || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") || !strings.HasPrefix(long, strings.TrimSuffix(got, "...")) {
		t.Errorf("%d bytes cut to %q (%d bytes), want at most %d valid bytes ending in ...", len(long), got, len(got), MaxReason)
	}
	if got := shortReason(strings.Repeat("x", MaxReason)); len(got) != MaxReason || strings.HasSuffix(got, "...") {
		t.Errorf("a reason of exactly %d bytes was cut: %q", MaxReason, got)
	}
}

// TestReasonWireCompatible: a change carrying its reason decodes, for a member of
// the previous version (which reads the body and ignores what follows), exactly as
// the change without it; an extension of an unknown tag is skipped; an extension
// that does not decode leaves the body standing.
func TestReasonWireCompatible(t *testing.T) {
	h := header{typ: msgDelta, name: "peer", epoch: 7, seq: 9, sentAt: 1}
	e := entry{id: shortID("fp"), flags: flagDown, seq: 9, age: 3}
	plain := appendEntry(appendHeader(nil, h), e)
	unknown := append(append(cloneBytes(plain), 9, 3), 'a', 'b', 'c') // tag 9, 3 bytes
	with := appendReasons(cloneBytes(unknown), []reason{{id: e.id, text: "HTTP 503"}})
	old := reader{b: with}
	if oh, oe := old.header(), old.entry(); old.err != nil || oh != h || oe != e {
		t.Fatalf("the previous version reads %+v %+v (%v), want %+v %+v", oh, oe, old.err, h, e)
	}
	r := reader{b: with}
	r.header()
	r.entry()
	if rs := r.extensions(); len(rs) != 1 || rs[0] != (reason{id: e.id, text: "HTTP 503"}) {
		t.Fatalf("extensions read %+v, want the one reason past the unknown extension", rs)
	}
	for n := len(unknown) + 1; n < len(with); n++ { // truncated: no reason, no panic
		r := reader{b: with[:n]}
		r.header()
		r.entry()
		if rs := r.extensions(); len(rs) != 0 {
			t.Fatalf("truncated to %d bytes: read %+v", n, rs)
		}
	}
	long := appendReasons(cloneBytes(plain), []reason{{id: e.id, text: strings.Repeat("x", MaxReason+1)}})
	r = reader{b: long}
	r.header()
	r.entry()
	if rs := r.extensions(); len(rs) != 0 {
		t.Fatalf("a reason over %d bytes was read: %d bytes", MaxReason, len(rs[0].text))
	}
}

func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }

// TestReasonTravels: a member's failure reason reaches another in the change that
// announced the report down (what Probed queues in its place) and in its full
// report set; a message of a member of the previous version (no reason) leaves
// the reason empty; a passing probe keeps the last failure reason.
func TestReasonTravels(t *testing.T) {
	src, _ := New(Config{Name: "peer", Insecure: true})
	dst, _ := New(Config{Name: "self", Insecure: true, Quorum: DefaultQuorum})
	dst.alive["peer"] = memberlist.Node{Name: "peer"}
	src.Local("fp", status(true))
	src.Probed("fp", errors.New("HTTP 503 from 192.0.2.1:80"))
	msgs := src.queue.GetBroadcasts(0, 1<<16)
	if len(msgs) != 1 {
		t.Fatalf("%d broadcasts queued, want 1: the change with its reason in place of the change", len(msgs))
	}
	dst.handle(msgs[0], true)
	if got, ok := reasonOf(dst, "fp", "peer"); got != "HTTP 503 from 192.0.2.1:80" {
		t.Fatalf("reason %q (report held: %v), want the peer's", got, ok)
	}
	// A second failing probe, same change: no new message; the reason changes on
	// the sender and travels with its full report set.
	src.queue.Reset()
	src.Probed("fp", errors.New("timeout after 2s "+strings.Repeat("x", 200)))
	if n := src.queue.NumQueued(); n != 0 {
		t.Fatalf("%d broadcasts for a reason changing while down, want 0", n)
	}
	dst.handle(src.stateMsg(), false)
	got, _ := reasonOf(dst, "fp", "peer")
	if len(got) > MaxReason || !strings.HasPrefix(got, "timeout after 2s") {
		t.Fatalf("after the full report set, reason %q (%d bytes), want the new one cut to %d", got, len(got), MaxReason)
	}
	// Back up: the last failure reason stays, on both.
	src.Local("fp", status(false))
	src.Probed("fp", nil)
	for _, b := range src.queue.GetBroadcasts(0, 1<<16) {
		dst.handle(b, true)
	}
	if v := dst.View("fp"); len(v.Reports) != 1 || v.Reports[0].Down || v.Reports[0].Reason != got {
		t.Fatalf("after the peer's report went up: %+v, want it up with reason %q", v.Reports, got)
	}
	dst.handle(msgs[0], true) // the first reason again, late: the report it came with is older
	if late, _ := reasonOf(dst, "fp", "peer"); late != got {
		t.Fatalf("a late reason of an older report replaced the last one: %q, want %q", late, got)
	}
	if own, _ := reasonOf(src, "fp", "peer"); own != got {
		t.Fatalf("the member's own row: reason %q, want %q", own, got)
	}
	// The previous version's message: no reason known.
	old, _ := New(Config{Name: "old", Insecure: true})
	old.Local("fp", status(true))
	dst.alive["old"] = memberlist.Node{Name: "old"}
	for _, b := range old.queue.GetBroadcasts(0, 1<<16) {
		dst.handle(b, true)
	}
	if r, ok := reasonOf(dst, "fp", "old"); !ok || r != "" {
		t.Fatalf("a change without reason: held %v, reason %q", ok, r)
	}
}

// TestFailureReasonReachesMembersDefaults: on 3 members at the timers users get, a
// member's reason for a report turning down reaches the others with the change, and
// a member that joins later gets it with the full report set.
func TestFailureReasonReachesMembersDefaults(t *testing.T) {
	ms := cluster(t, nil, 3, member{})
	const why = "HTTP 503 Service Unavailable"
	ms[1].Local("fp", status(false))
	ms[1].Local("fp", status(true))
	ms[1].Probed("fp", errors.New(why))
	waitFor(t, 5*time.Second, "every other member shows m01's reason", func() bool {
		for _, m := range []*Fleet{ms[0], ms[2]} {
			if r, _ := reasonOf(m, "fp", "m01"); r != why {
				return false
			}
		}
		return true
	})
	late := start(t, nil, member{name: "late", key: testKey, bind: netipLoopback0(), join: []string{ms[0].Addr()}})
	waitForDetail(t, 20*time.Second, "the member that joined later shows m01's reason", func() bool {
		r, _ := reasonOf(late, "fp", "m01")
		return r == why
	}, func() string {
		r, ok := reasonOf(late, "fp", "m01")
		return ": held " + map[bool]string{true: "yes", false: "no"}[ok] + ", reason " + r
	})
}
