package control

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/healthroute/healthroute/internal/atomicfile"
)

// stateFile is the file in the data directory holding the state as last applied.
// It is rewritten (atomically, synced) after every batch of commands raft hands
// over (ApplyBatch), so that a member
// answers DNS from its last state from the moment it starts, before raft has
// elected a leader and replayed its log. It names the raft index and term of the
// last entry it holds: commands the file already holds are skipped when raft
// replays them, but only once openState has found that entry in this member's
// log (or snapshot); otherwise the state is rebuilt from the log.
const stateFile = "state.json"

// fsm is raft's state machine over State.
type fsm struct {
	dir      string
	store    *logStore    // records the index applied; nil in tests of the state alone
	onChange func(*State) // after every change, with a copy: not under mu

	mu sync.Mutex
	st *State
	// rebuild: st is a state.json this member's log does not contain; it is
	// served until raft sends the log, and the first entry or snapshot raft
	// applies starts again from the empty state.
	rebuild bool
	// lostAt: the index of the state this member had when its log was lost; it
	// votes again once it has applied that far (voteGate).
	lostAt uint64
	// done is the index of the last state fully applied: persisted and handed to
	// onChange, so that what this member serves shows it. raft's own applied index
	// runs ahead of it (raft counts an entry applied once queued for the state
	// machine), so a member waiting to show a change waits on this one.
	done atomic.Uint64
	// applied is closed (and replaced) each time done moves: awaitApplied waits on it.
	applied chan struct{}
}

// setDone records index as fully applied and wakes those waiting for it.
func (f *fsm) setDone(index uint64) {
	f.done.Store(index)
	f.mu.Lock()
	if f.applied != nil {
		close(f.applied)
		f.applied = nil
	}
	f.mu.Unlock()
}

// shown is the index of the last entry this member's state shows, given raft's
// applied index (entries handed to the state machine, which may still be queued
// for it: up to many batches ahead). It is done, and past it every entry that
// is no command (raft's no-ops and configuration entries change no state) up to
// the first command, or handed.
func (f *fsm) shown(handed uint64) uint64 {
	done := f.done.Load()
	if done >= handed || f.store == nil {
		return done
	}
	for i := done + 1; i <= handed && i <= done+1024; i++ {
		var l raft.Log
		if err := f.store.GetLog(i, &l); err != nil || l.Type == raft.LogCommand {
			return i - 1
		}
	}
	return min(handed, done+1024)
}

// appliedChan returns a channel closed the next time done moves.
func (f *fsm) appliedChan() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.applied == nil {
		f.applied = make(chan struct{})
	}
	return f.applied
}

// mayVote reports whether this member holds (applied) the state it had before
// its log was lost, if it was.
func (f *fsm) mayVote() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lostAt == 0 || (!f.rebuild && f.st.Index >= f.lostAt)
}

// loadFSM reads the state file in dir; a missing file is the empty state.
func loadFSM(dir string) (*fsm, error) {
	f := &fsm{dir: dir, st: NewState()}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	switch {
	case os.IsNotExist(err):
		return f, nil
	case err != nil:
		return nil, err
	}
	st := NewState()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %v", filepath.Join(dir, stateFile), err)
	}
	f.st = st
	return f, nil
}

// LoadState reads the state last applied from the state file of data directory
// dir, without opening the directory; a missing file is the empty state.
func LoadState(dir string) (*State, error) {
	f, err := loadFSM(dir)
	if err != nil {
		return nil, err
	}
	return f.st, nil
}

// state returns a copy of the state.
func (f *fsm) state() *State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.Clone()
}

// Apply implements raft.FSM: it returns nil or the command's *Refusal.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch implements raft.BatchingFSM: it applies the commands of logs (raft
// hands over up to MaxAppendEntries committed entries at once, configuration
// entries among them, which change no state) in order, then persists the state
// and hands it to onChange once. Persisting once per batch, not per command, is
// what lets a member replaying a long log (a restart under the Route 53 API's
// load) catch up: each write rewrites and syncs the whole state file. Each
// result is nil or the command's *Refusal (or an error for an undecodable one).
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	res := make([]any, len(logs))
	cmds := make([]*Command, len(logs))
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		cmds[i] = new(Command)
		if err := json.Unmarshal(l.Data, cmds[i]); err != nil {
			res[i], cmds[i] = fmt.Errorf("undecodable command at index %d: %v", l.Index, err), nil
		}
	}
	// The batch applies to a copy, outside the lock, which then replaces the
	// state: a state once published is never changed in place, and readers
	// (mayVote, asked of every vote request; State) never wait on a batch.
	f.mu.Lock()
	base, rebuild := f.st, f.rebuild
	f.mu.Unlock()
	var work *State
	changed := false
	for i, l := range logs {
		if cmds[i] == nil {
			continue
		}
		if work == nil && rebuild {
			work = NewState()
		} else if work == nil {
			work = base.Clone()
		}
		if l.Index <= work.Index { // applied before a restart: in the state file already
			continue
		}
		if err := work.Apply(l.Index, cmds[i]); err != nil {
			res[i] = err
		}
		work.Term = l.Term
		changed = true
	}
	if !changed {
		return res
	}
	f.mu.Lock()
	f.st, f.rebuild = work, false
	f.mu.Unlock()
	f.persist(work)
	if f.onChange != nil {
		f.onChange(work.Clone())
	}
	f.setDone(work.Index)
	return res
}

// persist writes st to the state file (a temporary file, synced, renamed over
// it) and records its index as applied in the log store. A failure is logged and
// counted: the log still holds every change, and a start rebuilds from it.
func (f *fsm) persist(st *State) {
	b, err := json.Marshal(st)
	if err == nil {
		err = atomicfile.Write(filepath.Join(f.dir, stateFile), b, 0o600)
	}
	if err != nil {
		stateWriteFailures.Inc()
		log.Errorf("control: writing the state file: %v (the raft log still holds every change; a start rebuilds the state from it)", err)
	}
	if f.store != nil {
		if err := f.store.setApplied(st.Index); err != nil {
			stateWriteFailures.Inc()
			log.Errorf("control: recording the index applied in the raft log: %v", err)
		}
	}
}

// Snapshot implements raft.FSM.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) { return snapshot{f.state()}, nil }

// Restore implements raft.FSM. A snapshot older than the state already applied
// (raft restores its latest snapshot at start, then replays the log after it) is
// a prefix of it and is skipped.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st := NewState()
	if err := json.NewDecoder(rc).Decode(st); err != nil {
		return fmt.Errorf("restoring a snapshot: %v", err)
	}
	f.mu.Lock()
	if st.Index <= f.st.Index && !f.rebuild {
		f.mu.Unlock()
		return nil
	}
	f.st, f.rebuild = st, false
	cp := st.Clone()
	f.mu.Unlock()
	f.persist(cp)
	if f.onChange != nil {
		f.onChange(cp)
	}
	f.setDone(cp.Index)
	return nil
}

type snapshot struct{ st *State }

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.st); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshot) Release() {}
