package fleet

import (
	"slices"
	"time"
)

// MaxClockOffset is how far a member's wall clock may differ from this one's
// before it is logged. Nothing the fleet decides reads a wall clock (ages and
// orders are measured on each member's monotonic clock), so an offset costs
// nothing but what it says about the host: its logs, TLS and tokens are off too.
const MaxClockOffset = 2 * time.Second

// offsetLogEvery bounds the clock-offset lines: one per member per this long.
const offsetLogEvery = 10 * time.Minute

// mono is t as sentAt carries it: ms since this incarnation started, on the
// monotonic clock (from 1, so that the first beat is newer than none).
func (f *Fleet) mono(t time.Time) uint64 {
	return uint64(max(t.Sub(f.start).Milliseconds(), 0)) + 1
}

// freshFor is how long after its probe an own report stays fresh: 3 of the gaps
// between its probes (the longer of the last two) plus 2 heartbeats; before a
// second probe gives a gap, Config.Stale.
func (f *Fleet) freshFor(r *ownReport) time.Duration {
	if r.gap <= 0 {
		return f.cfg.Stale
	}
	return 3*r.gap + 2*f.cfg.Beat
}

// stallLocked notices that this process did not run for a while (SIGSTOP, a long
// GC pause, a VM migration): the fleet runs at least every heartbeat, so a gap of
// more than 2 on the monotonic clock since it last ran is a stall. Reports whose
// probe grew older than their bound meanwhile lose their verdict before anything
// is sent (ageOwnLocked), and when any did, the wake count goes up and what was
// queued before the stall is dropped: every message from now on carries the new
// count, and the others count none of this member's reports confirmed under the
// old one, whatever reaches them late. Callers: every path that sends (a beat,
// a change, a full set) or records a probe.
//
// A suspend of the whole host (a laptop lid, a VM suspended) stops the monotonic
// clock too: the time the host spent suspended (Linux's boot clock minus its
// monotonic clock, neither of which an NTP step moves) is added to the gap, and
// every time this member holds is moved back by it, as if the monotonic clock had
// counted it (shiftLocked).
func (f *Fleet) stallLocked(now time.Time) {
	gap := now.Sub(f.ran)
	f.ran = now
	if s := f.suspended(); s > f.slept {
		slept := s - f.slept
		f.slept = s
		if slept > f.cfg.Beat/2 {
			f.shiftLocked(slept)
			gap += slept
		}
	}
	if gap <= 2*f.cfg.Beat {
		return
	}
	n := 0
	for id, r := range f.own {
		// The stall is no gap between probes: counted as one, it would keep the
		// check's next reports fresh (freshFor) for 3 times the stall.
		r.nogap = true
		if r.flags&(flagPending|flagStale) == 0 && now.Sub(r.observed) > f.freshFor(r) {
			f.setOwnLocked(id, r, r.flags|flagPending, now, false)
			f.restart[id] = struct{}{}
			n++
		}
	}
	if n == 0 {
		return
	}
	f.wake++
	f.queue.Reset()
	f.dirtyAll = true
	staleReports.WithLabelValues(memberLabel(f.cfg.Name)).Add(float64(n))
	log.Warningf("fleet: this process did not run for %s; %d of its reports are stale until probed again", gap.Round(time.Millisecond), n)
	f.poke()
}

// shiftLocked moves every time this member holds back by d, the time its host
// spent suspended: its own probes, when it heard from each member and when each
// member's reports were probed, so that they age by d as they would have had the
// monotonic clock run.
func (f *Fleet) shiftLocked(d time.Duration) {
	back := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.Add(-d)
		}
	}
	for _, r := range f.own {
		back(&r.observed)
	}
	// This member's own clock, as its messages carry it (sentAt), counts the
	// suspension: the others read their arrival against it (heardLocked).
	f.start = f.start.Add(-d)
	for _, p := range f.peers {
		back(&p.heard)
		back(&p.vouched)
		for i := range p.sent[:min(p.nSent, len(p.sent))] {
			back(&p.sent[i])
		}
		for id, r := range p.reports {
			back(&r.probed)
			p.reports[id] = r
		}
	}
}

// ageOwnLocked marks own reports whose probe is older than their freshness bound
// as having no verdict, and those of checks no longer probed for max(Stale, 3
// gaps) as stale; either way their threshold window restarts (see OnStale), as
// does the window of a report still without a verdict whose probes grew as old,
// once until the next probe. It forgets stale ones after 10 Stale. It returns the change messages and whether any changed.
func (f *Fleet) ageOwnLocked(now time.Time) (outs []*bcast, changed bool) {
	forget := 10 * f.cfg.Stale
	for id, r := range f.own {
		age := now.Sub(r.observed)
		switch {
		case r.flags&flagStale == 0 && age > max(f.cfg.Stale, 3*r.gap):
			outs = append(outs, f.setOwnLocked(id, r, r.flags|flagStale, now, true))
			f.restart[id], r.aged = struct{}{}, true
			changed = true
		case r.flags&(flagStale|flagPending) == 0 && age > f.freshFor(r):
			outs = append(outs, f.setOwnLocked(id, r, r.flags|flagPending, now, true))
			f.restart[id], r.aged = struct{}{}, true
			staleReports.WithLabelValues(memberLabel(f.cfg.Name)).Inc()
			changed = true
		case r.flags&flagStale == 0 && !r.aged && age > f.freshFor(r):
			// No verdict yet, and its probes stopped (this member was no
			// longer a checker): the results counted so far are too old to
			// complete a window with the next ones.
			f.restart[id], r.aged = struct{}{}, true
		case r.flags&flagStale != 0 && age > forget:
			delete(f.own, id)
			delete(f.restart, id)
			f.digest -= mix(id, r.flags)
			f.seq++ // full report sets from now on tell the others it is gone
		}
	}
	return outs, changed
}

// restartWindows hands the checks whose reports lost their verdict to OnStale;
// until it returns, Local keeps them pending whatever verdict it is told (one
// computed before the restart must not bring back the old window).
func (f *Fleet) restartWindows() {
	f.mu.Lock()
	if len(f.restart) == 0 {
		f.mu.Unlock()
		return
	}
	ids := make([]uint64, 0, len(f.restart))
	fps := make([]string, 0, len(f.restart))
	for id := range f.restart {
		ids = append(ids, id)
		if r := f.own[id]; r != nil {
			fps = append(fps, r.fp)
		}
	}
	f.mu.Unlock()
	if f.OnStale != nil {
		f.OnStale(fps)
	}
	f.mu.Lock()
	for _, id := range ids {
		delete(f.restart, id)
	}
	f.mu.Unlock()
}

// noteOffsetLocked records how far p's wall clock (wall, unix ms, read when its beat
// was sent) is from this member's. Transit only makes the difference look smaller
// (more negative), so the largest of the last 8 is the estimate; beyond
// MaxClockOffset it is logged, at most once per member every offsetLogEvery.
func (f *Fleet) noteOffsetLocked(name string, p *peer, wall uint64, now time.Time) {
	d := time.Duration(int64(wall)-f.wall().UnixMilli()) * time.Millisecond
	p.offsets[p.nOffsets%len(p.offsets)] = d
	p.nOffsets++
	off := slices.Max(p.offsets[:min(p.nOffsets, len(p.offsets))])
	clockOffset.WithLabelValues(memberLabel(name)).Set(off.Seconds())
	if (off > MaxClockOffset || off < -MaxClockOffset) && (p.warned.IsZero() || now.Sub(p.warned) > offsetLogEvery) {
		p.warned = now
		log.Warningf("fleet: member %s's clock differs from this one's by %s (more than %s); the quorum does not depend on it, but its logs and certificates do",
			name, off.Round(time.Millisecond), MaxClockOffset)
	}
}

// forgetMember drops the metric series of a member that is gone.
func forgetMember(name string) {
	staleReports.DeleteLabelValues(memberLabel(name))
	clockOffset.DeleteLabelValues(memberLabel(name))
	heartbeatsMissed.DeleteLabelValues(memberLabel(name))
}
