package health

import (
	"sync"
	"time"
)

// Probe results are published at a pace. A result that changes a check's published
// status (a flip, or a check's first result) is published at once while
// publications are rare; when they come faster than their pace allows (a burst: at
// start-up every check's first result changes its status), the results are marked
// and folded into one publication when the pace allows the next, however many
// arrive meanwhile.
//
// Each publication is charged publishCostShare times an estimate of its work,
// between publishGapMin and publishGapMax, and publications may run ahead of what
// they were charged by at most publishBurst-1 minimal gaps (a generic cell rate
// whose cells differ in size). The work grows with the statuses held by the shards
// a publication copies, which its subscribers then compare: at 100,000 checks a
// shard holds about 1,600, and a publication of many results copies all 64. It is
// estimated at costPerStatus a copied status rather than timed, since a busy core
// would stretch the time. So under a burst publications take about a tenth of a
// core, and a result waits at most one publication's charge (a second at most)
// before the one that covers it starts.
const (
	publishGapMin    = 2 * time.Millisecond
	publishGapMax    = time.Second
	publishCostShare = 10
	costPerStatus    = 100 * time.Nanosecond
	publishBurst     = 4
)

// pacer spaces publications (see publishSoon).
type pacer struct {
	mu    sync.Mutex
	tat   time.Time // theoretical arrival time: publications' charges run until then
	armed bool      // a publication is due on timer
	timer *time.Timer
}

// gapFor is the charge of a publication that copied copied statuses.
func gapFor(copied int) time.Duration {
	cost := time.Duration(copied) * costPerStatus
	return min(publishGapMax, max(publishGapMin, publishCostShare*cost))
}

// reserve charges a publication starting at now the least gap, or reports how
// long until the pace allows one.
func (p *pacer) reserve(now time.Time) (wait time.Duration) {
	if wait = p.tat.Add(-(publishBurst - 1) * publishGapMin).Sub(now); wait > 0 {
		return wait
	}
	p.tat = later(p.tat, now).Add(publishGapMin)
	return 0
}

// charged adds to the charge of a publication that copied copied statuses what
// reserve did not.
func (p *pacer) charged(copied int) {
	p.mu.Lock()
	p.tat = p.tat.Add(gapFor(copied) - publishGapMin)
	p.mu.Unlock()
}

// publishSoon publishes request want of a probe result: at once if the pace
// allows, else in the publication due on timer, which it arms when none is.
func (s *Scheduler) publishSoon(want uint64) {
	p := &s.pace
	p.mu.Lock()
	if p.armed {
		p.mu.Unlock()
		return // folded into the publication due
	}
	if wait := p.reserve(time.Now()); wait > 0 {
		p.armed = true
		s.wg.Add(1) // Stop waits for it, or stops it and publishes itself
		p.timer = time.AfterFunc(wait, s.publishDue)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	s.flush(want)
}

// publishDue is the publication armed by publishSoon: it covers every request made
// until now.
func (s *Scheduler) publishDue() {
	defer s.wg.Done()
	p := &s.pace
	p.mu.Lock()
	if wait := p.reserve(time.Now()); wait > 0 {
		// A publication since the timer was armed cost more than reserved then.
		s.wg.Add(1)
		p.timer = time.AfterFunc(wait, s.publishDue)
		p.mu.Unlock()
		return
	}
	p.armed = false
	p.mu.Unlock()
	s.flushAll()
}

// stopPace publishes at once what waits for the publication due on timer, if any.
func (s *Scheduler) stopPace() {
	p := &s.pace
	p.mu.Lock()
	stopped := p.armed && p.timer.Stop()
	if stopped {
		p.armed = false
	}
	p.mu.Unlock()
	if stopped {
		s.wg.Done()
		s.flushAll()
	}
}

// flushAll publishes every request made so far.
func (s *Scheduler) flushAll() {
	s.mu.Lock()
	want := s.want
	s.mu.Unlock()
	s.flush(want)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
