package control

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// The term and vote survive a reopen; the file keeps its size (every write is in
// place); a write torn in the newest slot leaves the one before it.
func TestTermFileKeepsTheNewestWholeCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, logFile)
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for term := uint64(1); term <= 5; term++ {
		if err := s.SetUint64([]byte("CurrentTerm"), term); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("m2")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	tf := filepath.Join(dir, termFileName)
	if fi, err := os.Stat(tf); err != nil || fi.Size() != 2*termSlot {
		t.Fatalf("%s: %v %v, want %d bytes", termFileName, fi, err, 2*termSlot)
	}
	s, err = openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	term, _ := s.GetUint64([]byte("CurrentTerm"))
	cand, _ := s.Get([]byte("LastVoteCand"))
	if term != 5 || string(cand) != "m2" {
		t.Fatalf("after a reopen: term %d vote %q, want 5 m2", term, cand)
	}
	s.Close()

	// Tear the newest copy (sequence 7, 1 for the file's creation, 6 sets: slot 1).
	b, _ := os.ReadFile(tf)
	if seq := binary.BigEndian.Uint64(b[termSlot+4:]); seq != 7 {
		t.Fatalf("the newest copy in slot 1 holds sequence %d, want 7", seq)
	}
	b[termSlot+20] ^= 0xff
	os.WriteFile(tf, b, 0o600)
	s, err = openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	term, _ = s.GetUint64([]byte("CurrentTerm"))
	if _, err := s.Get([]byte("LastVoteCand")); err != errNotFound || term != 5 {
		t.Fatalf("with the newest copy torn: term %d, vote %v; want the copy before it (term 5, no vote)", term, err)
	}
	s.Close()

	// Both copies damaged, or the file cut: refused, naming it.
	for name, damage := range map[string]func([]byte) []byte{
		"both copies": func(b []byte) []byte { b = bytes.Clone(b); b[20] ^= 1; b[termSlot+20] ^= 1; return b },
		"cut":         func(b []byte) []byte { return b[:700] },
	} {
		os.WriteFile(tf, damage(b), 0o600)
		if _, err := openLogStore(path); err == nil || !strings.Contains(err.Error(), tf+" is damaged") {
			t.Fatalf("%s: got %v, want a refusal naming %s", name, err, tf)
		}
	}
}

// A log without the term file (an earlier version's, which kept the term and
// vote in its stable bucket) gives them to a new term file and keeps them no
// more; a new log starts a new term file, as it did the stable bucket.
func TestTermFileTakesTheLogsStableKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, logFile)
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketStable)
		b.Put([]byte("CurrentTerm"), key(9))
		return b.Put([]byte("LastVoteCand"), []byte("m3"))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Remove(filepath.Join(dir, termFileName))
	if s, err = openLogStore(path); err != nil {
		t.Fatal(err)
	}
	term, _ := s.GetUint64([]byte("CurrentTerm"))
	cand, _ := s.Get([]byte("LastVoteCand"))
	left := 0
	s.db.View(func(tx *bolt.Tx) error { left = tx.Bucket(bucketStable).Stats().KeyN; return nil })
	if term != 9 || string(cand) != "m3" || left != 0 {
		t.Fatalf("migrated: term %d vote %q, %d keys left in the log; want 9 m3 0", term, cand, left)
	}
	s.Close()

	os.Remove(path) // the log lost: its term goes with it
	if s, err = openLogStore(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetUint64([]byte("CurrentTerm")); err != errNotFound {
		t.Fatalf("a new log kept the old term file's term: %v", err)
	}
}

// On a full disk (RLIMIT_FSIZE at the term file's size, in a child process: the
// limit is the whole process's) the log's writes fail and the term's still
// succeed: raft, which panics when it cannot persist a new term, keeps running.
func TestTermWriteSucceedsOnAFullDisk(t *testing.T) {
	if dir := os.Getenv("HEALTHROUTE_TERMFILE_FULL_DISK"); dir != "" {
		fullDiskChild(dir)
		return
	}
	dir := t.TempDir()
	s, err := openLogStore(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	s.StoreLogs(entries(1, 3, 1))
	s.SetUint64([]byte("CurrentTerm"), 1)
	s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTermWriteSucceedsOnAFullDisk$")
	cmd.Env = append(os.Environ(), "HEALTHROUTE_TERMFILE_FULL_DISK="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "log write: file too large") || !strings.Contains(string(out), "term write: ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if s, err = openLogStore(filepath.Join(dir, logFile)); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	term, _ := s.GetUint64([]byte("CurrentTerm"))
	last, _ := s.LastIndex()
	if term != 2 || last != 3 {
		t.Fatalf("after the full disk: term %d, last entry %d; want 2 (written) and 3 (the append refused)", term, last)
	}
}

// fullDiskChild is the full-disk test's child: it limits its files to the term
// file's size, then appends to the log and writes a new term, printing each
// outcome.
func fullDiskChild(dir string) {
	s, err := openLogStore(filepath.Join(dir, logFile))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(1)
	}
	lim := unix.Rlimit{Cur: 2 * termSlot, Max: unix.RLIM_INFINITY}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		os.Exit(1)
	}
	err = s.StoreLogs(entries(4, 400, 1)) // past the limit: EFBIG (Go ignores SIGXFSZ)
	if err == nil || !strings.Contains(err.Error(), syscall.EFBIG.Error()) {
		fmt.Fprintln(os.Stderr, "log write: no EFBIG:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "log write:", syscall.EFBIG.Error())
	if err := s.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		fmt.Fprintln(os.Stderr, "term write:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "term write: ok")
	s.Close()
	os.Exit(0)
}
