package health

import "time"

// Saved is a check's last judged state as a process keeps it on disk, so that the
// next process starts from it instead of from a new check's default (healthy): a
// restart in the middle of an outage must not send traffic back to the endpoint that
// is down.
type Saved struct {
	Down   bool      `json:"down"`
	Since  time.Time `json:"since,omitzero"` // when Down last changed (zero: never)
	Judged time.Time `json:"judged"`         // the end of the last probe counted in a full threshold window
}

// Restore hands the scheduler the states an earlier process saved. A check acquired
// later whose fingerprint has a state judged at most fresh ago starts from it, as if
// its own probes had judged it: its first probe counts toward a flip away from the
// saved state, and its status carries a Verdict at once. Each saved state is used
// once, by the first Acquire of its fingerprint; states older than fresh, and
// fingerprints no check has, are ignored. Call it before the Acquire of the checks
// it is for.
func (s *Scheduler) Restore(states map[string]Saved, fresh time.Duration, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restore == nil {
		s.restore = map[string]Saved{}
	}
	for fp, st := range states {
		if _, running := s.checks[fp]; running {
			continue
		}
		if age := now.Sub(st.Judged); age >= 0 && age <= fresh {
			s.restore[fp] = st
		}
	}
}

// restoreLocked starts e from its saved state, if one was restored for fp, and
// reports whether it did. s.mu must be held.
func (s *Scheduler) restoreLocked(fp string, e *entry) bool {
	st, ok := s.restore[fp]
	if !ok {
		return false
	}
	delete(s.restore, fp)
	e.info.State = State{Down: st.Down}
	e.info.Seen = true
	e.info.LastChange = st.Since
	e.judged, e.restored = st.Judged, true
	return true
}

// Judged returns the last judged state of every check that has one: whose probes
// completed a threshold window (or flipped it), or that started from a saved state.
// A check still in its first window, whose state is a new check's default, has none.
func (s *Scheduler) Judged() map[string]Saved {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Saved, len(s.checks))
	for fp, e := range s.checks {
		if !e.judged.IsZero() {
			out[fp] = Saved{Down: e.info.State.Down, Since: e.info.LastChange, Judged: e.judged}
		}
	}
	return out
}
