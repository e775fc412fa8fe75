package control

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/raft"
)

// openState decides what this member serves from at start, before raft runs: the
// newest of state.json, its latest snapshot and its own log's entries up to the
// index it last applied (entries applied are committed). state.json is trusted
// only when this member's log (or snapshot) holds the entry it names, at the same
// term: a state.json ahead of its log, or of another log, would otherwise make
// raft skip the commands of the log that reuse its indexes, acknowledged and never
// applied. Such a state is served until raft brings the log, then rebuilt from it.
// It reports whether the member may bootstrap a new log when it has none.
func openState(cfg Config, f *fsm, store *logStore, snaps raft.SnapshotStore) (mayBootstrap bool, err error) {
	st := f.st
	first, err := store.FirstIndex()
	if err != nil {
		return false, err
	}
	last, err := store.LastIndex()
	if err != nil {
		return false, err
	}
	applied, err := store.applied()
	if err != nil {
		return false, err
	}
	metas, err := snaps.List()
	if err != nil {
		return false, fmt.Errorf("snapshots in %s: %v", cfg.Dir, err)
	}
	var snap *raft.SnapshotMeta
	if len(metas) > 0 {
		snap = metas[0]
	}
	holds := func(index, term uint64) bool {
		var l raft.Log
		if err := store.GetLog(index, &l); err == nil {
			return term == 0 || l.Term == term // 0: a state.json of an earlier version
		}
		return snap != nil && snap.Index == index && (term == 0 || snap.Term == term)
	}

	var working *State
	if st.Index == 0 || holds(st.Index, st.Term) {
		working = st
	}
	if snap != nil && (working == nil || snap.Index > working.Index) {
		if working, err = readSnapshot(snaps, snap.ID); err != nil {
			return false, err
		}
	}
	if working == nil && first == 1 {
		working = NewState() // rebuilt from the whole log
	}
	if working == nil {
		switch {
		case last == 0 && len(cfg.Voters) == 1:
			// Nothing to diverge from: the one voter starts a new log from the state.
			log.Warningf("control: %s holds the state up to raft index %d (term %d) but the raft log in %s is empty (lost or moved away): the single voter starts a new log from that state", stateFile, st.Index, st.Term, cfg.Dir)
			st.Index, st.Term = 0, 0
			return true, nil
		case last == 0:
			log.Errorf("control: %s holds the state up to raft index %d (term %d) but the raft log in %s is empty (lost or moved away): this member answers from it, does not start a new log, waits for the other voters to send theirs, and does not vote until it has applied them up to that index; changes are refused until a leader with the log is elected", stateFile, st.Index, st.Term, cfg.Dir)
		default:
			log.Errorf("control: %s holds the state up to raft index %d (term %d), which the raft log in %s (entries %d-%d) does not: this member answers from it until raft sends the log, then rebuilds the state from the log, and does not vote until it has applied it up to that index", stateFile, st.Index, st.Term, cfg.Dir, first, last)
		}
		f.rebuild, f.lostAt = true, st.Index
		return false, nil
	}
	// Catch up with this member's own committed entries.
	from, fromFile := working.Index, st.Index
	for i := working.Index + 1; i <= applied; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			break
		}
		if l.Type != raft.LogCommand {
			continue
		}
		var cmd Command
		if err := json.Unmarshal(l.Data, &cmd); err != nil {
			return false, fmt.Errorf("raft log entry %d: undecodable command: %v", i, err)
		}
		working.Apply(l.Index, &cmd)
		working.Term = l.Term
	}
	if working != st || working.Index != fromFile {
		log.Infof("control: serving the state at raft index %d, from %s (index %d), the snapshot and this member's log (applied up to %d)", working.Index, stateFile, fromFile, max(applied, from))
		f.st = working
		f.persist(working.Clone())
	}
	return true, nil
}

// readSnapshot reads the state a snapshot holds.
func readSnapshot(snaps raft.SnapshotStore, id string) (*State, error) {
	meta, rc, err := snaps.Open(id)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %v", id, err)
	}
	defer rc.Close()
	st := NewState()
	if err := json.NewDecoder(rc).Decode(st); err != nil {
		return nil, fmt.Errorf("snapshot %s: %v", id, err)
	}
	if st.Index > meta.Index {
		return nil, fmt.Errorf("snapshot %s: holds index %d, past its own %d", id, st.Index, meta.Index)
	}
	st.Index, st.Term = meta.Index, meta.Term
	return st, nil
}
