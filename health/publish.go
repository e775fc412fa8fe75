package health

import "maps"

// Snapshot returns the latest published snapshot (nil before the first). It never
// waits for a publication under way.
func (s *Scheduler) Snapshot() *Snapshot { return s.snap.Load() }

// Subscribe calls fn with the current snapshot now and with each later one, in order,
// until the returned function is called. fn runs with publications held off, so it
// must not call back into the scheduler's Subscribe or Republish.
func (s *Scheduler) Subscribe(fn func(*Snapshot)) (cancel func()) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.subs == nil {
		s.subs = map[int]func(*Snapshot){}
	}
	id := s.next
	s.next++
	s.subs[id] = fn
	fn(s.snap.Load())
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

// statusUpdate is one fingerprint's status to publish; ok is false when the check
// is gone.
type statusUpdate struct {
	fp string
	st Status
	ok bool
}

// flush returns once a publication covering request want has finished: it runs one
// itself unless another caller's, started later, already covered it. Publications
// are serialised, so subscribers see them in order, and each copies only the shards
// whose statuses changed. The scheduler's lock is held only while the statuses to
// publish are read, not while shards are copied or subscribers run.
func (s *Scheduler) flush(want uint64) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	prev := s.snap.Load()
	s.mu.Lock()
	if s.served >= want {
		s.mu.Unlock()
		return
	}
	ups := s.collectLocked(prev)
	s.mu.Unlock()
	next, copied := applyUpdates(prev, ups)
	if next != prev {
		s.gen++
		next.Gen = s.gen
		s.snap.Store(next)
		for _, fn := range s.subs {
			fn(next)
		}
	}
	s.pace.charged(copied)
}

// collectLocked takes the marked fingerprints and returns the statuses of those
// that differ from prev's, marking every request so far served. s.mu must be held.
func (s *Scheduler) collectLocked(prev *Snapshot) []statusUpdate {
	dirty, all := s.dirty, s.all
	s.dirty, s.all, s.served = nil, false, s.want
	var ups []statusUpdate
	update := func(fp string) {
		old, had := prev.lookup(fp)
		e, ok := s.checks[fp]
		if !ok {
			if had {
				ups = append(ups, statusUpdate{fp: fp})
			}
			return
		}
		st := Status{Down: e.info.State.Down, Seen: e.info.Seen, Since: e.info.LastChange}
		if s.Aggregator != nil {
			local := st
			if fails, _ := thresholds(e.spec); e.restored && e.window < fails && !e.flip {
				local.Restored = true
			}
			st = s.Aggregator.Status(fp, local)
		}
		if (had && old == st) || (!had && st == (Status{})) {
			return // unchanged; or absent, which reads as new, and nothing to record yet
		}
		ups = append(ups, statusUpdate{fp: fp, st: st, ok: true})
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
		return ups
	}
	for fp := range dirty {
		update(fp)
	}
	return ups
}

// applyUpdates returns prev with ups applied, sharing the shards they do not touch
// (prev itself when there are none), and how many statuses the shards it copied
// hold.
func applyUpdates(prev *Snapshot, ups []statusUpdate) (next *Snapshot, copied int) {
	if len(ups) == 0 {
		return prev, 0
	}
	next = &Snapshot{}
	if prev != nil {
		next.shards = prev.shards
	}
	var done [shardCount]bool
	for _, u := range ups {
		i := shardOf(u.fp)
		if !done[i] {
			done[i] = true
			m := maps.Clone(next.shard(i))
			if m == nil {
				m = map[string]Status{}
			}
			next.shards[i] = &shard{m: m}
			copied += len(m)
		}
		if u.ok {
			next.shards[i].m[u.fp] = u.st
		} else {
			delete(next.shards[i].m, u.fp)
		}
	}
	return next, copied
}
