package control

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// change applies req through n, retrying (for up to 10 s) a change refused before
// it was proposed, as during an election.
func change(t *testing.T, n *Node, req Request) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for range 1000 {
		err := n.Change(context.Background(), req)
		var qe *QuorumError
		if err == nil {
			return
		}
		if !errors.As(err, &qe) || qe.Unknown || time.Now().After(deadline) {
			t.Fatalf("%s: %+v: %v", n.Name(), req, err)
		}
	}
	t.Fatalf("%s: %+v: refused 1000 times", n.Name(), req)
}

// The repair of a lost log: the raft log deleted, state.json kept. A
// single voter starts a new log from its state; every change after it is applied
// on top of that state, none skipped.
func TestSingleVoterWithLostLogKeepsItsStateAndEveryLaterChange(t *testing.T) {
	cfg := Config{Name: "solo", Bind: freeAddr(t), Dir: t.TempDir()}
	n := openNode(t, cfg)
	waitFor(t, 10*time.Second, "the single voter leads", func() bool { return hasLeader(n) })
	for range 5 { // push the state's index well past what a new log starts at
		change(t, n, Request{Token: "ops", Set: map[string]bool{"east": true}})
	}
	change(t, n, Request{Token: "ops", Set: map[string]bool{"east": false}})
	n.Close()
	if err := os.Remove(filepath.Join(cfg.Dir, logFile)); err != nil {
		t.Fatal(err)
	}
	n = openNode(t, cfg)
	if n.State().On("east") {
		t.Fatal("after the log was lost: east on, want off from state.json")
	}
	waitFor(t, 10*time.Second, "the single voter leads", func() bool { return hasLeader(n) })
	for i := range 3 {
		change(t, n, Request{Token: "ops", Override: map[string]string{"web": []string{Unhealthy, Healthy, Unhealthy}[i]}})
	}
	st := n.State()
	if st.On("east") || st.Overrides["web"] != false || len(st.Overrides) != 1 || len(st.Audit) != 9 {
		t.Fatalf("east on=%t overrides %v, %d audit entries; want off, web unhealthy, 9", st.On("east"), st.Overrides, len(st.Audit))
	}
	n.Close()
	n = openNode(t, cfg)
	if st := n.State(); st.On("east") || len(st.Audit) != 9 {
		t.Fatalf("after another restart: east on=%t, %d audit entries", st.On("east"), len(st.Audit))
	}
}

// Every voter's log lost, state.json kept: no voter starts a new log (each would
// skip the others' commands), so changes are refused, never acknowledged and
// dropped; DNS keeps the state.
func TestVotersWithLostLogsRefuseChangesAndKeepTheirState(t *testing.T) {
	cfgs, nodes := group(t, 3)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	change(t, nodes[0], Request{Token: "ops", Set: map[string]bool{"east": false}})
	waitFor(t, 2*time.Second, "every member applies it", func() bool {
		return !nodes[1].State().On("east") && !nodes[2].State().On("east")
	})
	for i, n := range nodes {
		n.Close()
		os.Remove(filepath.Join(cfgs[i].Dir, logFile))
	}
	for i := range nodes {
		nodes[i] = openNode(t, cfgs[i])
	}
	for _, n := range nodes {
		if err := n.Change(context.Background(), Request{Token: "ops", Set: map[string]bool{"west": false, "east": true}}); !errors.Is(err, ErrNoQuorum) {
			t.Fatalf("%s: a change with every log lost: %v, want refused for want of a quorum", n.Name(), err)
		}
		if st := n.State(); st.On("east") || !st.On("west") {
			t.Fatalf("%s: east on=%t west on=%t, want off and on", n.Name(), st.On("east"), st.On("west"))
		}
	}
}

// A minority's log lost, state.json kept: that member does not start a log of its
// own; the leader sends it the log and it holds every change, in the same order.
func TestVoterWithLostLogRecoversFromTheOthers(t *testing.T) {
	cfgs, nodes := group(t, 3)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	for range 4 {
		change(t, nodes[0], Request{Token: "ops", Set: map[string]bool{"east": false}})
	}
	waitFor(t, 2*time.Second, "m2 applies them", func() bool { return len(nodes[2].State().Audit) == 4 })
	nodes[2].Close()
	os.Remove(filepath.Join(cfgs[2].Dir, logFile))
	nodes[2] = openNode(t, cfgs[2])
	if nodes[2].State().On("east") {
		t.Fatal("m2 restarted without its log: east on, want off from state.json")
	}
	// Until it holds what it held, m2 does not vote: its empty log would make it
	// vote for a candidate missing acknowledged changes.
	if nodes[2].fsm.mayVote() {
		t.Fatal("m2 votes with its log lost")
	}
	change(t, nodes[0], Request{Token: "ops", Set: map[string]bool{"east": true}})
	waitFor(t, 10*time.Second, "m2 holds every change", func() bool {
		st := nodes[2].State()
		return len(st.Audit) == 5 && st.On("east")
	})
	if !nodes[2].fsm.mayVote() {
		t.Fatal("m2 does not vote once it holds the log again")
	}
}

// A member started alone (the other voters down, so no leader) serves the state
// its own log holds, when state.json is missing or behind: the commands it
// applied are committed.
func TestMemberStartedAloneServesItsLog(t *testing.T) {
	for name, spoil := range map[string]func(dir string, old []byte){
		"state.json missing": func(dir string, _ []byte) { os.Remove(filepath.Join(dir, stateFile)) },
		"state.json behind":  func(dir string, old []byte) { os.WriteFile(filepath.Join(dir, stateFile), old, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			cfgs, nodes := group(t, 3)
			waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
			change(t, nodes[0], Request{Token: "ops", Set: map[string]bool{"east": false}})
			var old []byte
			waitFor(t, 2*time.Second, "m0 writes it to state.json", func() bool {
				old, _ = os.ReadFile(filepath.Join(cfgs[0].Dir, stateFile))
				return strings.Contains(string(old), `"east":false`)
			})
			change(t, nodes[0], Request{Token: "ops", Set: map[string]bool{"east": true, "west": false}})
			for _, n := range nodes {
				n.Close()
			}
			spoil(cfgs[0].Dir, old)
			first := openFirst(t, cfgs[0])
			if first == nil || !first.On("east") || first.On("west") || len(first.Audit) != 2 {
				t.Fatalf("the first state served: %+v, want east on, west off, 2 audit entries", first)
			}
		})
	}
}

// A state.json naming an entry at a term this member's log does not hold (a file
// of another history) is not trusted: the state is rebuilt from the log.
func TestStateFileOfAnotherHistoryIsRebuiltFromTheLog(t *testing.T) {
	cfg := Config{Name: "solo", Bind: freeAddr(t), Dir: t.TempDir()}
	n := openNode(t, cfg)
	change(t, n, Request{Token: "ops", Set: map[string]bool{"east": false}})
	n.Close()
	path := filepath.Join(cfg.Dir, stateFile)
	st, err := LoadState(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Term += 7 // another history's entry at the same index
	st.Controls["west"] = false
	b, _ := json.Marshal(st)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	n = openNode(t, cfg)
	if st := n.State(); st.On("east") || !st.On("west") || len(st.Audit) != 1 {
		t.Fatalf("east on=%t west on=%t, %d audit entries; want the log's state: off, on, 1", st.On("east"), st.On("west"), len(st.Audit))
	}
}

// A write of state.json that fails (here its temporary file's path is taken by a
// directory; a full disk fails the same way) is counted, the change still
// applies, and the next start serves it from the log.
func TestFailedStateWriteIsCountedAndRebuiltAtStart(t *testing.T) {
	cfg := Config{Name: "solo", Bind: freeAddr(t), Dir: t.TempDir()}
	n := openNode(t, cfg)
	blocker := filepath.Join(cfg.Dir, stateFile+".tmp")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(stateWriteFailures)
	change(t, n, Request{Token: "ops", Set: map[string]bool{"east": false}})
	if got := testutil.ToFloat64(stateWriteFailures) - before; got != 1 {
		t.Errorf("state write failures counted: %v, want 1", got)
	}
	if st, err := LoadState(cfg.Dir); err != nil || !st.On("east") {
		t.Fatalf("state.json after the failed write: %v, want it still behind (east on)", err)
	}
	n.Close()
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	first := openFirst(t, cfg)
	if first == nil || first.On("east") || len(first.Audit) != 1 {
		t.Fatalf("the first state served after the restart: %+v, want east off from the log", first)
	}
}

// openFirst opens a node on cfg and returns the first state it serves: the one
// Open hands over before raft runs.
func openFirst(t *testing.T, cfg Config) *State {
	t.Helper()
	var first *State
	n, err := Open(cfg, func(s *State) {
		if first == nil {
			first = s
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return first
}
