package history

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the file in the history directory that holds the saved histories.
const FileName = "healthroute-history.gob"

// fileVersion changes when the file's layout does; a file of another version is
// not read.
const fileVersion = 1

// saved is the file's content.
type saved struct {
	Version int
	Checks  []savedCheck
}

type savedCheck struct {
	FP, Name string
	Down     bool
	Total    uint64
	Samples  []savedSample // oldest first
	Changes  []savedChange // oldest first
}

type savedSample struct {
	Minute           uint32
	Probes, Failures uint16
	Sum              uint32
	Max              uint16
	Down             uint8
}

type savedChange struct {
	At              int64
	Reason, Members string
	Down            bool
}

// Save writes every history to dir, replacing the previous file at once (a
// temporary file renamed over it), so a crash mid-write leaves the previous one.
func (s *Store) Save(dir string) error {
	s.mu.Lock()
	out := saved{Version: fileVersion, Checks: make([]savedCheck, 0, len(s.checks))}
	for _, c := range s.checks {
		sc := savedCheck{FP: c.fp, Name: c.name, Down: c.down, Total: c.total,
			Samples: make([]savedSample, 0, len(c.samples)), Changes: make([]savedChange, 0, len(c.changes))}
		start := 0
		if len(c.samples) == MaxMinutes {
			start = c.next
		}
		for i := range c.samples {
			sm := c.samples[(start+i)%len(c.samples)]
			sc.Samples = append(sc.Samples, savedSample{sm.minute, sm.probes, sm.failures, sm.sum, sm.max, sm.down})
		}
		for i := range c.changes {
			ch := c.changes[(c.cnext+i)%len(c.changes)]
			sc.Changes = append(sc.Changes, savedChange{ch.at, ch.reason, ch.members, ch.down})
		}
		out.Checks = append(out.Checks, sc)
	}
	s.dirty = false
	s.mu.Unlock()

	tmp, err := os.CreateTemp(dir, FileName+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	w := bufio.NewWriter(tmp)
	err = gob.NewEncoder(w).Encode(&out)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, FileName))
}

// Load reads the histories saved in dir into s, for the checks s does not hold
// yet; a directory without the file is no error.
func (s *Store) Load(dir string) error {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var in saved
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&in); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if in.Version != fileVersion {
		return fmt.Errorf("%s: version %d, expected %d", f.Name(), in.Version, fileVersion)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range in.Checks {
		if _, ok := s.checks[sc.FP]; ok {
			continue
		}
		c := &check{fp: sc.FP, name: sc.Name, down: sc.Down}
		samples := sc.Samples[max(0, len(sc.Samples)-MaxMinutes):]
		c.samples = make([]sample, 0, len(samples))
		for _, sm := range samples {
			c.samples = append(c.samples, sample{minute: sm.Minute, probes: sm.Probes, failures: sm.Failures, sum: sm.Sum, max: sm.Max, down: sm.Down})
		}
		if len(c.samples) == MaxMinutes {
			c.next = 0
		}
		changes := sc.Changes[max(0, len(sc.Changes)-MaxChanges):]
		c.changes = make([]change, 0, len(changes))
		for _, ch := range changes {
			c.changes = append(c.changes, change{at: ch.At, reason: clip(ch.Reason, MaxReason), members: clip(ch.Members, MaxMembers), down: ch.Down})
		}
		c.total = max(sc.Total, uint64(len(c.changes)))
		s.checks[sc.FP] = c
	}
	return nil
}

// Dirty reports whether the store changed since it was last saved.
func (s *Store) Dirty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dirty
}
