package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/healthroute/healthroute/health"
)

// TestReportsRedecideEveryMember: a report from another member re-decides the
// check on every member that decides it, whether this member probes it or not:
// a member that is not one of the check's checkers, one of role answer, and one
// with every member probing that has not probed the check yet. The decision
// follows the checkers' reports (a change message, a change carried by a beat, a
// report confirmed after the checker's wake), and only that check is re-decided.
// The rule before marked a check only when this member held an own report of it,
// so none of these members re-decided from the checkers' reports alone.
func TestReportsRedecideEveryMember(t *testing.T) {
	placed := &health.Spec{Name: "web", Target: "http://192.0.2.1/", Checkers: 3}
	everyone := &health.Spec{Name: "all", Target: "http://192.0.2.2/"}
	other := &health.Spec{Name: "other", Target: "http://192.0.2.3/", Checkers: 3}
	for _, tc := range []struct {
		name string
		role Role
		spec *health.Spec
	}{
		{"not a checker", RoleBoth, placed},
		{"role answer", RoleAnswer, placed},
		{"role answer, every member probes", RoleAnswer, everyone},
		{"every member probes, not probed here yet", RoleBoth, everyone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			f := clockedFleet(t, Config{Name: "self", Insecure: true, Quorum: DefaultQuorum, Role: tc.role}, &now)
			f.alive["self"] = memberlist.Node{Name: "self"}
			f.meta["self"] = memberMeta{role: tc.role, hash: nameHash("self")}
			// taken returns the checks marked for re-deciding, and clears them
			// as the fleet's loop does.
			taken := func() (map[string]struct{}, bool) {
				f.mu.Lock()
				defer f.mu.Unlock()
				d, all := f.dirty, f.dirtyAll
				f.dirty, f.dirtyAll = map[string]struct{}{}, false
				return d, all
			}
			send := func(name string, typ byte, seq, wake uint64, body func([]byte) []byte) {
				now = now.Add(10 * time.Millisecond)
				h := header{typ: typ, name: name, epoch: 1, seq: seq, sentAt: uint64(now.Sub(time.Unix(0, 0)).Milliseconds()), wake: wake}
				f.handle(body(appendHeader(nil, h)), false)
			}
			beat := func(name string, seq, wake uint64, es ...entry) {
				send(name, msgBeat, seq, wake, func(b []byte) []byte {
					b = appendUint64(appendUint64(b, 0), uint64(now.UnixMilli()))
					b = appendUvarint(b, uint64(len(es)))
					for _, e := range es {
						b = appendEntry(b, e)
					}
					return b
				})
			}
			// Members named so that self is not among the 3 checkers of placed,
			// each heard from (a candidate).
			var checkers []string
			for i := 0; i < 100 && (len(checkers) < 3 || f.Probes(placed)); i++ {
				name := fmt.Sprintf("m%d", i)
				f.alive[name] = memberlist.Node{Name: name}
				f.meta[name] = memberMeta{hash: nameHash(name)}
				f.mu.Lock()
				f.membersMovedLocked()
				f.mu.Unlock()
				beat(name, 0, 0)
				checkers = f.Checkers(placed)
			}
			if len(checkers) != 3 || f.Probes(placed) {
				t.Fatalf("checkers %v, want 3 without self", checkers)
			}
			if tc.spec == everyone {
				checkers = checkers[:0]
				for name := range f.alive {
					if name != "self" {
						checkers = append(checkers, name)
					}
				}
			}
			fp := tc.spec.Fingerprint()
			if tc.spec == everyone && tc.role == RoleBoth && !f.Probes(tc.spec) {
				t.Fatal("every member probes it, self included")
			}
			f.Probes(other)
			// The scheduler publishes the check: healthy, as a new check.
			if st := f.Status(fp, health.Status{}); st.Down {
				t.Fatal("a new check is healthy")
			}
			delta := func(name string, seq, wake uint64, down bool) {
				send(name, msgDelta, seq, wake, func(b []byte) []byte {
					return appendEntry(b, entry{id: shortID(fp), flags: flagsOf(down), seq: seq})
				})
			}
			redecided := func(what string, wantDown bool) {
				t.Helper()
				d, all := taken()
				if _, ok := d[fp]; !ok && !all {
					t.Fatalf("%s: the check is not re-decided (dirty %v)", what, d)
				}
				if _, ok := d[other.Fingerprint()]; ok {
					t.Errorf("%s: another check was re-decided", what)
				}
				if st := f.Status(fp, health.Status{}); st.Down != wantDown {
					t.Fatalf("%s: decided down %v, want %v (%+v)", what, st.Down, wantDown, f.View(fp))
				}
			}
			for _, c := range checkers {
				beat(c, 1, 0)
				delta(c, 1, 0, false)
			}
			redecided("the checkers' first reports", false)
			for i, c := range checkers {
				delta(c, 2, 0, true)
				if i == 0 { // 2 of 3 healthy
					d, _ := taken()
					if _, ok := d[fp]; !ok {
						t.Fatalf("a checker's change message did not mark the check (dirty %v)", d)
					}
				}
			}
			redecided("every checker's change to down", true)
			for _, c := range checkers { // changes carried by beats only
				beat(c, 3, 0, entry{id: shortID(fp), seq: 3})
			}
			redecided("changes to healthy carried by beats", false)
			for _, c := range checkers { // each woke: nothing of theirs counts
				beat(c, 3, 1)
			}
			taken()
			if v := f.View(fp); v.Total != 0 {
				t.Fatalf("reports from before the checkers' wake count: %+v", v)
			}
			for _, c := range checkers { // confirmed under the new wake count
				beat(c, 4, 1, entry{id: shortID(fp), seq: 3})
			}
			redecided("reports confirmed after the wake", false)
		})
	}
}
