package health

import "time"

// State is one check's status as its own probes see it, before Disabled and Invert
// are applied. The zero value is a new check, and new checks are healthy.
type State struct {
	Down bool // the endpoint failed its last full threshold window
	run  int  // consecutive results that disagree with Down
}

// Observe returns the state after one probe result: it flips only after fails
// failures (or passes passes) in a row, as Route 53's checkers do. A threshold
// below 1 counts as 1.
func (s State) Observe(ok bool, fails, passes int) State {
	if ok == !s.Down { // agrees with the current state
		s.run = 0
		return s
	}
	if s.run++; (ok && s.run >= passes) || (!ok && s.run >= fails) {
		return State{Down: !ok}
	}
	return s
}

// Run returns how many consecutive results so far disagree with Down.
func (s State) Run() int { return s.run }

// Status is what a snapshot records of one probed check.
type Status struct {
	Down  bool      // the raw state (before Disabled and Invert)
	Seen  bool      // at least one probe has completed
	Since time.Time // when Down last changed (zero: never)
}

// shardCount splits a snapshot's states so that a publication copies only the shards
// whose checks changed, not every check's status.
const shardCount = 64

// Snapshot is an immutable view of every probed check's status, keyed by fingerprint.
// A Snapshot is never modified after it is published; the zero Snapshot (and nil)
// knows no check, so every check reads as new: healthy, unless inverted.
type Snapshot struct {
	Gen    uint64 // increases with each publication
	shards [shardCount]map[string]Status
}

// shardOf hashes fp (FNV-1a) to a shard index.
func shardOf(fp string) int {
	h := uint32(2166136261)
	for i := 0; i < len(fp); i++ {
		h ^= uint32(fp[i])
		h *= 16777619
	}
	return int(h % shardCount)
}

// Status returns the recorded status of the check with fingerprint fp.
func (s *Snapshot) Status(fp string) Status {
	if s == nil {
		return Status{}
	}
	return s.shards[shardOf(fp)][fp]
}

func (s *Snapshot) lookup(fp string) (Status, bool) {
	if s == nil {
		return Status{}, false
	}
	st, ok := s.shards[shardOf(fp)][fp]
	return st, ok
}

// Len returns how many checks s records.
func (s *Snapshot) Len() int {
	if s == nil {
		return 0
	}
	n := 0
	for _, m := range s.shards {
		n += len(m)
	}
	return n
}

// Each calls fn for every check s records, in no particular order.
func (s *Snapshot) Each(fn func(fp string, st Status)) {
	if s == nil {
		return
	}
	for _, m := range s.shards {
		for fp, st := range m {
			fn(fp, st)
		}
	}
}

// Healthy evaluates spec against s: Disabled forces healthy, a calculated check counts
// its children, and Invert is applied last (ROUTE53.md 2.3.5 and 2.4).
func (s *Snapshot) Healthy(spec *Spec) bool {
	return s.raw(spec) != spec.Invert
}

func (s *Snapshot) raw(spec *Spec) bool {
	switch {
	case spec.Disabled:
		return true
	case spec.Type == Calculated:
		n := 0
		for _, c := range spec.Children {
			if s.Healthy(c) {
				n++
			}
		}
		return n >= spec.Threshold
	default:
		return !s.Status(spec.Fingerprint()).Down
	}
}

// Seen reports whether spec has a first result: probed checks after their first probe,
// calculated checks when every child has one, disabled checks always.
func (s *Snapshot) Seen(spec *Spec) bool {
	switch {
	case spec.Disabled:
		return true
	case spec.Type == Calculated:
		for _, c := range spec.Children {
			if !s.Seen(c) {
				return false
			}
		}
		return true
	default:
		return s.Status(spec.Fingerprint()).Seen
	}
}
