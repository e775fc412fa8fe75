package control

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	bolt "go.etcd.io/bbolt"
)

func entries(from, to, term uint64) []*raft.Log {
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte{byte(i)}, AppendedAt: time.Unix(1, int64(i))})
	}
	return ls
}

// The sequence that made raft-wal v0.4.0 panic on every later start (raft-wal#31):
// raft deletes an uncommitted suffix and appends over it; the log reopens with the
// new entries.
func TestLogStoreReopensAfterASuffixIsReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), logFile)
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.setApplied(7); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(8, 10); err != nil { // the uncommitted suffix
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(8, 9, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for range 3 {
		if s, err = openLogStore(path); err != nil {
			t.Fatal(err)
		}
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		commit, _ := s.applied()
		term, _ := s.GetUint64([]byte("CurrentTerm"))
		var l raft.Log
		if err := s.GetLog(9, &l); err != nil || l.Term != 2 || l.Data[0] != 9 {
			t.Fatalf("entry 9: %+v, %v", l, err)
		}
		if err := s.GetLog(10, &l); err != raft.ErrLogNotFound {
			t.Fatalf("entry 10 (deleted): %v", err)
		}
		if _, err := s.Get([]byte("LastVoteCand")); err == nil || err.Error() != "not found" {
			t.Fatalf("a missing stable key: %v, raft expects \"not found\"", err)
		}
		if first != 1 || last != 9 || commit != 7 || term != 2 {
			t.Fatalf("first %d last %d applied %d term %d, want 1 9 7 2", first, last, commit, term)
		}
		s.Close()
	}
}

// A damaged entry, or a configuration raft could not decode (raft panics on one),
// refuses the store when it opens, naming the entry.
func TestLogStoreRefusesADamagedLog(t *testing.T) {
	for name, damage := range map[string]func(v []byte) []byte{
		"a flipped bit": func(v []byte) []byte { v = append([]byte(nil), v...); v[20] ^= 1; return v },
		"a bad configuration": func([]byte) []byte {
			return encodeLog(&raft.Log{Index: 3, Term: 1, Type: raft.LogConfiguration, Data: []byte("not msgpack")})
		},
		"truncated": func(v []byte) []byte { return v[:10] },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), logFile)
			s, err := openLogStore(path)
			if err != nil {
				t.Fatal(err)
			}
			s.StoreLogs(entries(1, 5, 1))
			if err := s.db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketLogs)
				return b.Put(key(3), damage(b.Get(key(3))))
			}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := openLogStore(path); err == nil || !strings.Contains(err.Error(), "is damaged: entry 3") {
				t.Fatalf("got %v, want a refusal naming entry 3", err)
			}
		})
	}
}

// A data directory of an earlier version (raft-wal in wal/) is moved into the
// bbolt log at start, with raft's term and vote, and wal/ kept as wal.migrated.
func TestEarlierVersionsLogIsMigrated(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, walDir), 0o700)
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(filepath.Join(dir, walDir), wal.WithMetaStore(meta))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StoreLogs(entries(1, 40, 3)); err != nil {
		t.Fatal(err)
	}
	w.SetUint64([]byte("CurrentTerm"), 3)
	w.Set([]byte("LastVoteCand"), []byte("m1"))
	w.Close()
	meta.Close()
	s := openMigrated(t, dir)
	last, _ := s.LastIndex()
	term, _ := s.GetUint64([]byte("CurrentTerm"))
	cand, _ := s.Get([]byte("LastVoteCand"))
	var l raft.Log
	if err := s.GetLog(40, &l); err != nil || l.Term != 3 || last != 40 || term != 3 || string(cand) != "m1" {
		t.Fatalf("migrated: last %d term %d vote %q entry 40 %+v %v", last, term, cand, l, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wal.migrated")); err != nil {
		t.Fatalf("the old log is not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, walDir)); !os.IsNotExist(err) {
		t.Fatalf("wal/ still there: %v", err)
	}
}

// An earlier version's log that raft-wal cannot read is moved aside, not migrated
// and not a panic.
func TestUnreadableEarlierLogIsMovedAside(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, walDir), 0o700)
	seg := make([]byte, 4096)
	binary.BigEndian.PutUint64(seg, 0xdeadbeef)
	os.WriteFile(filepath.Join(dir, walDir, "wal-meta.db"), seg, 0o600)
	s := openMigrated(t, dir)
	if last, _ := s.LastIndex(); last != 0 {
		t.Fatalf("last index %d after an unreadable log", last)
	}
	moved, _ := filepath.Glob(filepath.Join(dir, "wal.unreadable-*"))
	if len(moved) != 1 {
		t.Fatalf("moved aside: %v", moved)
	}
}

// openMigrated opens the log in dir and migrates an earlier version's into it.
func openMigrated(t *testing.T, dir string) *logStore {
	t.Helper()
	s, err := openLogStore(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := migrateWAL(dir, s, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	return s
}

// A log cut short (truncated) at any length is refused with an error, or opens
// with every entry it held (a log that lost a suffix unknowingly would vote as
// if it held it), each found by its index (a cut can zero the keys of the index
// pages and leave a walk in order working): never a fault that kills the process
// (bbolt reads pages past the end of the file through its memory map). Cut to
// nothing, it is a new log, as a log lost.
func TestLogStoreTruncatedIsRefusedOrReadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, logFile)
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 300; i++ { // one transaction each, as raft appends
		l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(strings.Repeat("x", 300)), AppendedAt: time.Unix(1, int64(i))}
		if err := s.StoreLog(l); err != nil {
			t.Fatal(err)
		}
		if err := s.setApplied(i); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	refused, opened, faults := 0, 0, 0
	for n := 0; n < len(whole); n += 1024 + 517*(n%2) { // page boundaries and inside pages
		cut := filepath.Join(dir, fmt.Sprintf("cut-%d.db", n))
		if err := os.WriteFile(cut, whole[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := openLogStore(cut)
		if err != nil {
			if !strings.Contains(err.Error(), "is unreadable") && !strings.Contains(err.Error(), "is damaged") {
				t.Fatalf("cut at %d: %v", n, err)
			}
			refused++
			if strings.Contains(err.Error(), "a memory fault") {
				faults++
			}
			continue
		}
		opened++
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		applied, _ := s.applied()
		if n > 0 && (first != 1 || last != 300 || applied != 300) {
			t.Fatalf("cut at %d: opened with entries %d-%d, applied %d, want 1-300, 300", n, first, last, applied)
		}
		for i := first; i <= last && i > 0; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); err != nil {
				t.Fatalf("cut at %d: opened, but entry %d: %v", n, i, err)
			}
		}
		s.Close()
	}
	t.Logf("%d bytes cut at %d lengths: %d refused (%d on a memory fault), %d opened", len(whole), refused+opened, refused, faults, opened)
	if faults == 0 {
		t.Fatal("no cut made bbolt fault: the test no longer covers what killed the process")
	}
}

// A member whose log refused a write asks for no votes until a write succeeds,
// or standAfter has passed (every member's disk may have been full).
func TestLogStoreFailedWriteStopsStanding(t *testing.T) {
	dir := t.TempDir()
	s, err := openLogStore(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	if !s.mayStand() {
		t.Fatal("a new log may not stand")
	}
	s.db.Close() // every write fails from now on
	if err := s.StoreLogs(entries(1, 1, 1)); err == nil {
		t.Fatal("a write to a closed log succeeded")
	}
	if s.mayStand() {
		t.Fatal("standing after a failed write")
	}
	s.failedAt.Store(time.Now().Add(-standAfter - time.Second).UnixNano())
	if !s.mayStand() {
		t.Fatalf("not standing %s after the last failed write", standAfter+time.Second)
	}
	if s.db, err = bolt.Open(filepath.Join(dir, logFile), 0o600, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.StoreLogs(entries(1, 1, 1))
	s.failedAt.Store(time.Now().UnixNano())
	if err := s.StoreLogs(entries(2, 2, 1)); err != nil || !s.mayStand() {
		t.Fatalf("a write succeeded (%v): mayStand %v, want true", err, s.mayStand())
	}
}
