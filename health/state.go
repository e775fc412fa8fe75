package health

import "time"

// State is one check's status as its own probes see it, before Disabled and Invert
// are applied. The zero value is a new check, and new checks are healthy.
type State struct {
	Down bool // the endpoint failed its last full threshold window
	run  int  // consecutive results that disagree with Down
}

// Observe returns the state after one probe result: it flips only after fails
// failures (or passes passes) in a row, as Route 53's checkers do.
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

// Status is what a snapshot records of one probed check.
type Status struct {
	Down  bool      // the raw state (before Disabled and Invert)
	Seen  bool      // at least one probe has completed
	Since time.Time // when Down last changed (zero: never)
}

// Snapshot is an immutable view of every probed check's status, keyed by fingerprint.
// A Snapshot is never modified after it is published; the zero Snapshot (and nil)
// knows no check, so every check reads as new: healthy, unless inverted.
type Snapshot struct {
	Gen    uint64 // increases with each publication
	states map[string]Status
}

// Status returns the recorded status of the check with fingerprint fp.
func (s *Snapshot) Status(fp string) Status {
	if s == nil {
		return Status{}
	}
	return s.states[fp]
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
