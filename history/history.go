// Package history keeps, per check, its status changes and one sample a minute of
// its probes, within a fixed memory budget, and saves them to a directory so they
// survive a restart.
package history

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/healthroute/healthroute/view"
)

const (
	// MaxChanges is how many status changes a check keeps: the latest ones.
	MaxChanges = 64
	// MaxMinutes is how many one-minute samples a check keeps: 24 hours.
	MaxMinutes = 24 * 60
	// MaxReason bounds the bytes of a change's reason kept (an error's text).
	MaxReason = 160
	// MaxMembers bounds the bytes of a change's member names kept.
	MaxMembers = 96
)

// Budget is the most memory one check's history holds, in bytes: MaxMinutes
// samples, MaxChanges changes with their reason and member names at their bounds,
// and the check's own record.
const Budget = MaxMinutes*sampleSize + MaxChanges*(changeSize+MaxReason+MaxMembers) + checkSize

const (
	sampleSize = 16 // sample: uint32 + 2*uint16 + uint32 + uint16 + 2*uint8
	changeSize = 48 // change: int64, two string headers (16 each), bool, padding
	checkSize  = 160
)

// sample is one minute of a check's probes.
type sample struct {
	minute   uint32 // minutes since the Unix epoch
	probes   uint16
	failures uint16
	sum      uint32 // latency sum, in units of 100 µs
	max      uint16 // largest latency, in milliseconds (saturates at 65 s)
	down     uint8  // 1: unhealthy at some time in the minute
	_        uint8
}

// change is one status change.
type change struct {
	at      int64  // Unix nanoseconds
	reason  string // at most MaxReason bytes
	members string // comma-separated, at most MaxMembers bytes
	down    bool   // the status changed to
}

// check is one check's history: rings of samples and changes.
type check struct {
	name    string
	fp      string
	samples []sample // ring, up to MaxMinutes; grows as minutes pass
	next    int      // where the next minute goes once the ring is full
	changes []change // ring, up to MaxChanges
	cnext   int
	total   uint64 // changes ever recorded
	down    bool   // the current status
}

// Store holds the history of every check, by fingerprint. It is safe for
// concurrent use; every method is a few map and slice operations under one lock,
// so probes and publications never wait for I/O.
type Store struct {
	mu     sync.Mutex
	checks map[string]*check
	dirty  bool
}

// New returns an empty Store.
func New() *Store { return &Store{checks: map[string]*check{}} }

func (s *Store) get(fp, name string) *check {
	c := s.checks[fp]
	if c == nil {
		c = &check{fp: fp, name: name}
		s.checks[fp] = c
	}
	if name != "" && c.name != name {
		c.name = name
	}
	return c
}

// Probe records one probe result of the check with fingerprint fp at at.
func (s *Store) Probe(fp, name string, at time.Time, ok bool, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.get(fp, name)
	sm := c.minute(at)
	sm.probes = satAdd16(sm.probes, 1)
	if !ok {
		sm.failures = satAdd16(sm.failures, 1)
	}
	if c.down {
		sm.down = 1
	}
	units := uint64(took / (100 * time.Microsecond))
	sm.sum = uint32(min(uint64(sm.sum)+units, 1<<32-1))
	sm.max = max(sm.max, uint16(min(took.Milliseconds(), 1<<16-1)))
	s.dirty = true
}

// Change records that the check with fingerprint fp changed to down (or healthy)
// at at, for reason, as the fleet members named saw it.
func (s *Store) Change(fp, name string, at time.Time, down bool, reason string, members []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.get(fp, name)
	c.down = down
	if down {
		c.minute(at).down = 1
	}
	ch := change{at: at.UnixNano(), down: down, reason: clip(reason, MaxReason), members: clip(strings.Join(members, ","), MaxMembers)}
	if len(c.changes) < MaxChanges {
		c.changes = appendBounded(c.changes, ch, MaxChanges)
	} else {
		c.changes[c.cnext] = ch
		c.cnext = (c.cnext + 1) % MaxChanges
	}
	c.total++
	s.dirty = true
}

// minute returns the sample of at's minute, starting it when at is past the
// newest; a minute with no probe and no change takes no sample.
func (c *check) minute(at time.Time) *sample {
	m := uint32(max(at.Unix()/60, 0))
	if n := len(c.samples); n > 0 {
		last := &c.samples[c.newest()]
		if m <= last.minute { // the same minute (or a clock step back: the newest)
			return last
		}
	}
	sm := sample{minute: m}
	if c.down {
		sm.down = 1
	}
	if len(c.samples) < MaxMinutes {
		c.samples = appendBounded(c.samples, sm, MaxMinutes)
		return &c.samples[len(c.samples)-1]
	}
	i := c.next
	c.samples[i] = sm
	c.next = (c.next + 1) % MaxMinutes
	return &c.samples[i]
}

// newest is the index of the latest sample.
func (c *check) newest() int {
	if len(c.samples) < MaxMinutes {
		return len(c.samples) - 1
	}
	return (c.next + MaxMinutes - 1) % MaxMinutes
}

// Get returns the history of the check with fingerprint fp, named name, and
// whether the store has one.
func (s *Store) Get(fp, name string) (view.History, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checks[fp]
	if c == nil {
		return view.History{Check: name, Changes: []view.Change{}, Minutes: []view.Minute{}}, false
	}
	h := view.History{Check: name, Changes: make([]view.Change, 0, len(c.changes)), Minutes: make([]view.Minute, 0, len(c.samples))}
	h.Dropped = c.total - uint64(len(c.changes))
	prev := false // the status before the oldest change kept: the opposite of it
	for i := range c.changes {
		ch := c.changes[(c.cnext+i)%len(c.changes)]
		if i == 0 {
			prev = !ch.down
		}
		v := view.Change{Time: time.Unix(0, ch.at).UTC(), From: word(prev), To: word(ch.down), Reason: ch.reason}
		if ch.members != "" {
			v.Members = strings.Split(ch.members, ",")
		}
		h.Changes = append(h.Changes, v)
		prev = ch.down
	}
	start := 0
	if len(c.samples) == MaxMinutes {
		start = c.next
	}
	for i := range c.samples {
		sm := c.samples[(start+i)%len(c.samples)]
		v := view.Minute{Time: time.Unix(int64(sm.minute)*60, 0).UTC(), Probes: int(sm.probes), Failures: int(sm.failures),
			Down: sm.down == 1, MaxMs: float64(sm.max)}
		if sm.probes > 0 {
			v.LatencyMs = float64(sm.sum) / 10 / float64(sm.probes)
		}
		h.Minutes = append(h.Minutes, v)
	}
	return h, true
}

// Retain drops the history of every check for which keep reports false: checks no
// running block defines any more.
func (s *Store) Retain(keep func(fp string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fp := range s.checks {
		if !keep(fp) {
			delete(s.checks, fp)
			s.dirty = true
		}
	}
}

// Bytes is the memory the history of fp holds now, by the sizes Budget counts.
func (s *Store) Bytes(fp string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checks[fp]
	if c == nil {
		return 0
	}
	n := checkSize + cap(c.samples)*sampleSize + cap(c.changes)*changeSize
	for _, ch := range c.changes {
		n += len(ch.reason) + len(ch.members)
	}
	return n
}

// Len reports how many checks the store holds.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.checks)
}

func word(down bool) string {
	if down {
		return "unhealthy"
	}
	return "healthy"
}

// clip returns a copy of at most n bytes of s, cut at a rune boundary, so the
// store never holds on to a larger string it was given.
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return strings.Clone(s)
}

// appendBounded appends v to a slice that never grows past limit elements of
// capacity (append alone may double it past the budget).
func appendBounded[T any](s []T, v T, limit int) []T {
	if len(s) == cap(s) {
		grown := make([]T, len(s), min(max(2*cap(s), 8), limit))
		copy(grown, s)
		s = grown
	}
	return append(s, v)
}

func satAdd16(a, b uint16) uint16 {
	if a > 1<<16-1-b {
		return 1<<16 - 1
	}
	return a + b
}
