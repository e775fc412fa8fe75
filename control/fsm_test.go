package control

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

func commandLog(t *testing.T, index uint64, c *Command) *raft.Log {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Term: 2, Type: raft.LogCommand, Data: b}
}

// A batch of committed entries is applied in order, each command with its own
// result, and persisted and handed on once: one state file write, one onChange,
// and what this member shows (done, applied_index) moves to the batch's last
// command at once. A configuration entry among them changes nothing.
func TestFSMAppliesABatchOnce(t *testing.T) {
	dir := t.TempDir()
	f, err := loadFSM(dir)
	if err != nil {
		t.Fatal(err)
	}
	var changes []*State
	f.onChange = func(s *State) { changes = append(changes, s) }
	logs := []*raft.Log{
		commandLog(t, 1, cmdAt(t0, map[string]bool{"east": false}, atLeastOne)),
		{Index: 2, Term: 2, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(raft.Configuration{})},
		commandLog(t, 3, cmdAt(t0, map[string]bool{"west": false}, atLeastOne)), // refused: the rule
		commandLog(t, 4, cmdAt(t0, map[string]bool{"gate": false})),
		{Index: 5, Term: 2, Type: raft.LogCommand, Data: []byte("{not json")},
	}
	res := f.ApplyBatch(logs)
	if len(res) != len(logs) || res[0] != nil || res[1] != nil || res[3] != nil {
		t.Fatalf("results %v: want one per entry, nil for the applied and the configuration", res)
	}
	if err, _ := res[2].(error); !errors.Is(err, ErrRefused) {
		t.Fatalf("entry 3: %v, want the rule's refusal", res[2])
	}
	if err, _ := res[4].(error); err == nil {
		t.Fatalf("entry 5, undecodable: %v, want an error", res[4])
	}
	if len(changes) != 1 || changes[0].Index != 4 || changes[0].On("east") || !changes[0].On("west") || changes[0].On("gate") {
		t.Fatalf("%d changes handed on, the last %+v; want one, at index 4, east and gate off", len(changes), changes[len(changes)-1])
	}
	if f.done.Load() != 4 {
		t.Fatalf("done %d, want 4", f.done.Load())
	}
	st, err := LoadState(dir)
	if err != nil || st.Index != 4 || len(st.Audit) != 3 {
		t.Fatalf("state file: %+v %v; want index 4 and 3 audit entries", st, err)
	}

	// Entries already in the state file (a restart replaying the log) are skipped:
	// nothing is written or handed on.
	if res := f.ApplyBatch(logs[:4]); len(changes) != 1 || res[2] != nil {
		t.Fatalf("a replayed batch: %d changes, results %v; want none", len(changes), res)
	}
	os.Remove(filepath.Join(dir, stateFile))
	if f.ApplyBatch([]*raft.Log{logs[1]}); len(changes) != 1 {
		t.Fatal("a configuration entry alone changed the state")
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); !os.IsNotExist(err) {
		t.Fatalf("a configuration entry alone wrote the state file: %v", err)
	}
}

// applied_index is what the state shows: not raft's applied index, which counts
// entries queued for the state machine, but the last command applied and past
// it the entries that are no commands.
func TestFSMShownIndex(t *testing.T) {
	dir := t.TempDir()
	store, err := openLogStore(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f, _ := loadFSM(dir)
	f.store = store
	logs := []*raft.Log{
		commandLog(t, 1, cmdAt(t0, map[string]bool{"east": false})),
		{Index: 2, Term: 2, Type: raft.LogNoop},
		{Index: 3, Term: 2, Type: raft.LogNoop},
		commandLog(t, 4, cmdAt(t0, map[string]bool{"east": true})),
		{Index: 5, Term: 2, Type: raft.LogNoop},
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	f.ApplyBatch(logs[:1])
	for handed, want := range map[uint64]uint64{0: 1, 1: 1, 3: 3, 5: 3} {
		if got := f.shown(handed); got != want {
			t.Errorf("raft's applied index %d, the state at 1: shown %d, want %d", handed, got, want)
		}
	}
	f.ApplyBatch(logs[3:4])
	if got := f.shown(5); got != 5 {
		t.Errorf("raft's applied index 5, the state at 4: shown %d, want 5", got)
	}
}
