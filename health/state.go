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
	// Verdict, set only on the statuses a Scheduler gives its Aggregator, says
	// that the state rests on a full threshold window of probes (failure_threshold
	// results counted since the check started or its window restarted, or a flip
	// since then); before that the state is a new check's default, or the saved one.
	Verdict bool
	// Restored, set only on the statuses a Scheduler gives its Aggregator, says
	// that the state is the one an earlier process saved (Restore) and no verdict
	// of this process's probes has replaced it yet: this instance's own answer
	// until it has one, never a verdict for others to count.
	Restored bool
}

// shardCount splits a snapshot's states so that a publication copies only the shards
// whose checks changed, not every check's status.
const shardCount = 64

// Snapshot is an immutable view of every probed check's status, keyed by fingerprint.
// A Snapshot is never modified after it is published; the zero Snapshot (and nil)
// knows no check, so every check reads as new: healthy, unless inverted.
type Snapshot struct {
	Gen    uint64 // increases with each publication
	shards [shardCount]*shard
}

// shard is one part of a snapshot's states. Snapshots share the shards in which
// nothing changed between them, so a shard, once published, is never written.
type shard struct{ m map[string]Status }

// shard returns the states of shard i (nil when empty).
func (s *Snapshot) shard(i int) map[string]Status {
	if s == nil || s.shards[i] == nil {
		return nil
	}
	return s.shards[i].m
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
	return s.shard(shardOf(fp))[fp]
}

func (s *Snapshot) lookup(fp string) (Status, bool) {
	st, ok := s.shard(shardOf(fp))[fp]
	return st, ok
}

// Len returns how many checks s records.
func (s *Snapshot) Len() int {
	n := 0
	for i := range shardCount {
		n += len(s.shard(i))
	}
	return n
}

// Each calls fn for every check s records, in no particular order.
func (s *Snapshot) Each(fn func(fp string, st Status)) {
	for i := range shardCount {
		for fp, st := range s.shard(i) {
			fn(fp, st)
		}
	}
}

// Diff calls fn for each fingerprint whose status differs between prev and s:
// added, removed or changed. It skips the shards the two snapshots share, so
// between consecutive publications it costs in proportion to what changed; a
// subscriber can use it to recompute only what depends on those checks.
func (s *Snapshot) Diff(prev *Snapshot, fn func(fp string)) {
	for i := range shardCount {
		if s != nil && prev != nil && s.shards[i] == prev.shards[i] {
			continue
		}
		a, b := prev.shard(i), s.shard(i)
		for fp, st := range b {
			if old, ok := a[fp]; !ok || old != st {
				fn(fp)
			}
		}
		for fp := range a {
			if _, ok := b[fp]; !ok {
				fn(fp)
			}
		}
	}
}

// Healthy evaluates spec against s with no operator override; see Judge.
func (s *Snapshot) Healthy(spec *Spec) bool {
	return s.Judge(spec, nil)
}

// Judge is the one place a check's health is decided. over holds the operator
// overrides by check name (true: healthy; nil: none). In order
// (docs/routing.md#check-health):
//
//  1. an operator override of the check wins outright;
//  2. a disabled check is healthy;
//  3. a calculated check is healthy when at least Threshold of its children are,
//     each judged by these same rules, so an override of a child counts;
//  4. a probed check is healthy unless its status in s is Down: the failure and
//     recovery thresholds over this instance's probes or, with a fleet, the quorum
//     of the reachable checkers' reports (decided before s was published); a check
//     s does not know yet is healthy;
//  5. Invert flips the outcome of 2-4 (never an override).
//
// A control check is a switch whose state is the entry of its name in over (on,
// healthy, when it has none), and Invert flips it too.
func (s *Snapshot) Judge(spec *Spec, over map[string]bool) bool {
	if spec.Type == Control {
		v, ok := over[spec.Name]
		return (!ok || v) != spec.Invert
	}
	if v, ok := over[spec.Name]; ok {
		return v
	}
	switch {
	case spec.Disabled:
		return !spec.Invert
	case spec.Type == Calculated:
		n := 0
		for _, c := range spec.Children {
			if s.Judge(c, over) {
				n++
			}
		}
		return (n >= spec.Threshold) != spec.Invert
	default:
		return !s.Status(spec.Fingerprint()).Down != spec.Invert
	}
}

// Seen reports whether spec has a first result: probed checks after their first probe,
// calculated checks when every child has one, disabled checks always.
func (s *Snapshot) Seen(spec *Spec) bool {
	switch {
	case spec.Disabled, spec.Type == Control:
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
