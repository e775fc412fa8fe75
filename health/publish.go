package health

import "maps"

// Snapshot returns the latest published snapshot (nil before the first).
func (s *Scheduler) Snapshot() *Snapshot {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	return s.snap
}

// Subscribe calls fn with the current snapshot now and with each later one, in order,
// until the returned function is called. fn runs with publications held off, so it
// must not call back into the scheduler's Subscribe, Snapshot or Republish.
func (s *Scheduler) Subscribe(fn func(*Snapshot)) (cancel func()) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.subs == nil {
		s.subs = map[int]func(*Snapshot){}
	}
	id := s.next
	s.next++
	s.subs[id] = fn
	fn(s.snap)
	return func() {
		s.pubMu.Lock()
		delete(s.subs, id)
		s.pubMu.Unlock()
	}
}

// Republish re-evaluates every check's published status and publishes a snapshot if
// any changed: for an Aggregator whose inputs from other instances changed.
func (s *Scheduler) Republish() {
	s.mu.Lock()
	s.all = true
	s.want++
	want := s.want
	s.mu.Unlock()
	s.flush(want)
}

// RepublishChecks is Republish for the given fingerprints only.
func (s *Scheduler) RepublishChecks(fps []string) {
	s.mu.Lock()
	var want uint64
	for _, fp := range fps {
		want = s.markLocked(fp)
	}
	s.mu.Unlock()
	if want > 0 {
		s.flush(want)
	}
}

// markLocked notes that fp's published status may be stale and returns the request
// number that a publication must cover. s.mu must be held.
func (s *Scheduler) markLocked(fp string) uint64 {
	if s.dirty == nil {
		s.dirty = map[string]struct{}{}
	}
	s.dirty[fp] = struct{}{}
	s.want++
	return s.want
}

// flush returns once a publication covering request want has finished: it runs one
// itself unless another caller's, started later, already covered it. Publications
// are serialised, so subscribers see them in order, and each copies only the shards
// whose statuses changed.
func (s *Scheduler) flush(want uint64) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.mu.Lock()
	if s.served >= want {
		s.mu.Unlock()
		return
	}
	dirty, all := s.dirty, s.all
	s.dirty, s.all, s.served = nil, false, s.want

	prev := s.snap
	var next Snapshot
	if prev != nil {
		next.shards = prev.shards
	}
	var copied [shardCount]bool
	changed := false
	update := func(fp string) {
		old, had := prev.lookup(fp)
		e, ok := s.checks[fp]
		if !ok && !had {
			return
		}
		var st Status
		if ok {
			st = Status{Down: e.info.State.Down, Seen: e.info.Seen, Since: e.info.LastChange}
			if s.Aggregator != nil {
				st = s.Aggregator.Status(fp, st)
			}
			if had && old == st {
				return
			}
			if !had && st == (Status{}) {
				return // absent reads as new; nothing to record yet
			}
		}
		i := shardOf(fp)
		if !copied[i] {
			copied[i] = true
			m := maps.Clone(next.shard(i))
			if m == nil {
				m = map[string]Status{}
			}
			next.shards[i] = &shard{m: m}
		}
		if ok {
			next.shards[i].m[fp] = st
		} else {
			delete(next.shards[i].m, fp)
		}
		changed = true
	}
	if all {
		for fp := range s.checks {
			update(fp)
		}
		prev.Each(func(fp string, _ Status) {
			if _, ok := s.checks[fp]; !ok {
				update(fp)
			}
		})
	} else {
		for fp := range dirty {
			update(fp)
		}
	}
	s.mu.Unlock()
	if !changed {
		return
	}
	s.gen++
	next.Gen = s.gen
	s.snap = &next
	for _, fn := range s.subs {
		fn(&next)
	}
}
