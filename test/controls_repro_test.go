package test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// leader returns the member whose view says it leads, waiting for one among
// members.
func (f *ctlFleet) leader(members ...int) int {
	f.t.Helper()
	at := -1
	waitUntil(f.t, 15*time.Second, "a leader", func() bool {
		for _, i := range members {
			if v, err := f.view(i, ""); err == nil && v.Raft.State == "Leader" {
				at = i
				return true
			}
		}
		return false
	}, f.diag)
	return at
}

// expect fails unless every given member's view has east and west as given and
// its DNS answer follows east.
func (f *ctlFleet) expect(east, west bool, members ...int) {
	f.t.Helper()
	want := ctlSecondary
	if east {
		want = ctlPrimary
	}
	waitUntil(f.t, 10*time.Second, "every member holds the state", func() bool {
		for _, i := range members {
			if v, err := f.view(i, ""); err != nil || v.on("east") != east || v.on("west") != west || f.answer(i) != want {
				return false
			}
		}
		return true
	}, f.diag)
}

// TestControlsRestartsAfterAnUncommittedSuffixIsReplaced is the sequence that left
// a voter unable to start with raft-wal v0.4.0 ("sealed segment has no index
// block", hashicorp/raft-wal#31): SIGKILL both followers, a change through the
// leader (not committed: 503), SIGKILL the leader, restart the followers, a change
// (200), restart the old leader (raft replaces its uncommitted entry), and
// restart it again. Every start succeeds and all three hold the committed change
// only.
func TestControlsRestartsAfterAnUncommittedSuffixIsReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	lead := f.leader(0, 1, 2)
	var followers []int
	for i := range f.ms {
		if i != lead {
			followers = append(followers, i)
			f.kill(i)
		}
	}
	if code, body := f.post(lead, "/v1/controls/east", "off"); code == http.StatusOK {
		t.Fatalf("a change with both followers down: %d %s, want it not applied", code, body)
	}
	f.kill(lead)
	for _, i := range followers {
		f.start(i)
	}
	f.ready(15*time.Second, followers...)
	if code, body := f.post(followers[0], "/v1/controls/west", "off"); code != http.StatusOK {
		t.Fatalf("west off through %s: %d %s", f.ms[followers[0]].name, code, body)
	}
	for range 2 {
		f.start(lead)
		f.expect(true, false, 0, 1, 2)
		f.kill(lead)
	}
	f.start(lead)
	f.expect(true, false, 0, 1, 2)
}

// TestControlsLostLogsWithStateKept: every voter's raft log deleted, state.json
// kept (the natural repair of a log that will not open). Each member answers from
// its state.json, and a change is refused (503), never acknowledged and dropped.
func TestControlsLostLogsWithStateKept(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	if code, body := f.post(0, "/v1/controls/east", "off"); code != http.StatusOK {
		t.Fatalf("east off: %d %s", code, body)
	}
	f.expect(false, true, 0, 1, 2)
	for i := range f.ms {
		f.kill(i)
		if err := os.Remove(filepath.Join(f.ms[i].dataDir, "raft.db")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range f.ms {
		f.start(i)
	}
	f.expect(false, true, 0, 1, 2)
	for i := range f.ms {
		code, body := f.post(i, "/v1/controls/west", "off")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "no quorum") {
			t.Errorf("west off through %s with every log lost: %d %s, want 503 (no quorum)", f.ms[i].name, code, body)
		}
	}
	f.expect(false, true, 0, 1, 2)
	if out := f.ms[0].srv.Output(); !strings.Contains(out, "the raft log in") || !strings.Contains(out, "is empty (lost or moved away)") {
		t.Errorf("dns-a does not say why it starts no log:\n%s", out)
	}
}

// TestControlsMissingStateFileServesTheLog: a member started alone (the others
// down) with state.json deleted answers the committed state from its own log,
// from its first answer on.
func TestControlsMissingStateFileServesTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	if code, body := f.post(1, "/v1/controls/east", "off"); code != http.StatusOK {
		t.Fatalf("east off: %d %s", code, body)
	}
	f.expect(false, true, 0, 1, 2)
	for i := range f.ms {
		f.kill(i)
	}
	if err := os.Remove(filepath.Join(f.ms[0].dataDir, "state.json")); err != nil {
		t.Fatal(err)
	}
	f.start(0)
	if got := f.ms[0].srv.First; got == nil || firstA(got) != ctlSecondary {
		t.Fatalf("dns-a's first answer with state.json deleted: %v, want the secondary (east off, from its log)", got)
	}
	wrong := slices.IndexFunc(make([]int, 50), func(int) bool { return f.answer(0) != ctlSecondary })
	if wrong >= 0 {
		t.Fatalf("answer %d of 50 is not the secondary", wrong)
	}
}
