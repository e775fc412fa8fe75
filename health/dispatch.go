package health

import (
	"container/heap"
	"context"
	"runtime"
	"sync"
	"time"
)

// The scheduler keeps no goroutine per check. Checks waiting for their next probe
// sit in a queue ordered by due time; one dispatcher goroutine sleeps until the
// earliest is due and hands that probe to a probe goroutine (one waiting for a turn,
// else a new one), which puts the check back in the queue, due one interval after
// the probe ended, and waits for another turn, exiting after probeWorkerIdle
// without one. An idle check so holds no stack: at 100,000 checks the goroutines
// that waited between probes cost the collector a scan of every one of their
// stacks and the runtime a shrink and regrowth of each stack per probe; there are
// only as many probe goroutines as probes ran at once in the last second.

// turn is a check's place in the due queue and what one probe of it hands the next.
// The fields but checker and last are guarded by the queue's lock.
type turn struct {
	due      time.Time // when the next probe (or ask of the Placer) is due
	qi       int       // index in the queue; -1 when not in it
	busy     bool      // a goroutine runs the check's turn now
	finished bool      // done is closed: the check is no longer probed
	here     bool      // placed here at the last ask (see Placer)
	woken    bool      // due moved to now by Replace; resume is the time it had
	resume   time.Time

	// Owned by the goroutine running the turn.
	checker Checker
	last    time.Duration // how long the previous probe held its slot
}

// dueQueue is the checks waiting for their next probe, earliest first.
type dueQueue struct {
	mu     sync.Mutex
	heap   dueHeap
	poke   chan struct{} // the earliest due time moved earlier
	work   chan turnReq  // turns for the probe goroutines waiting for one
	closed bool          // the scheduler stopped: nothing is queued any more
}

func (q *dueQueue) pokeCh() chan struct{} {
	if q.poke == nil {
		q.poke = make(chan struct{}, 1)
	}
	return q.poke
}

// push queues e due at due (q.mu held) and wakes the dispatcher when e is now the
// earliest.
func (q *dueQueue) pushLocked(e *entry, due time.Time) {
	e.turn.due, e.turn.woken = due, false
	heap.Push(&q.heap, e)
	if e.turn.qi == 0 {
		select {
		case q.pokeCh() <- struct{}{}:
		default:
		}
	}
}

// finishLocked marks e no longer probed and closes its done (q.mu held).
func (q *dueQueue) finishLocked(e *entry) {
	if e.turn.qi >= 0 {
		heap.Remove(&q.heap, e.turn.qi)
	}
	e.turn.finished = true
	close(e.done)
}

// stop takes a released check out of the queue. A check whose turn runs now is
// finished by that turn, which its cancelled context ends.
func (q *dueQueue) stop(e *entry) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !e.turn.busy && !e.turn.finished {
		q.finishLocked(e)
	}
}

// wakeAll makes every queued check that was placed elsewhere at its last ask due
// now, remembering its due time for when it is still placed elsewhere.
func (q *dueQueue) wakeAll(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.heap {
		t := &e.turn
		if t.here || t.woken || !t.due.After(now) {
			continue
		}
		t.woken, t.resume, t.due = true, t.due, now
		heap.Fix(&q.heap, t.qi)
	}
	select {
	case q.pokeCh() <- struct{}{}:
	default:
	}
}

// startLocked queues a newly acquired check, due after its jittered start delay.
// s.mu must be held.
func (s *Scheduler) startLocked(e *entry) {
	if s.ctx.Err() != nil {
		return // stopped: Stop has waited for its goroutines, start no more
	}
	e.ctx, e.cancel = context.WithCancel(s.ctx)
	e.done = make(chan struct{})
	e.turn.here = true
	first := time.Now().Add(s.jitter(effectiveInterval(e.spec)))
	s.due.mu.Lock()
	defer s.due.mu.Unlock()
	if s.due.closed {
		e.turn.finished = true
		close(e.done)
		return
	}
	s.due.pushLocked(e, first)
}

// dispatch starts the turn of each check as it comes due, until ctx ends; then it
// finishes every queued check.
func (s *Scheduler) dispatch(ctx context.Context) {
	q := &s.due
	q.mu.Lock()
	poke := q.pokeCh()
	q.work = make(chan turnReq)
	q.mu.Unlock()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		q.mu.Lock()
		now := time.Now()
		for len(q.heap) > 0 && !q.heap[0].turn.due.After(now) {
			e := heap.Pop(&q.heap).(*entry)
			e.turn.busy = true
			woken := e.turn.woken
			s.wg.Add(1)
			s.startTurn(ctx, e, woken)
		}
		wait := time.Hour
		if len(q.heap) > 0 {
			wait = q.heap[0].turn.due.Sub(now)
		}
		q.mu.Unlock()
		t.Reset(wait)
		select {
		case <-ctx.Done():
			q.mu.Lock()
			q.closed = true
			for len(q.heap) > 0 {
				q.finishLocked(q.heap[0])
			}
			q.mu.Unlock()
			return
		case <-t.C:
		case <-poke:
		}
	}
}

// probeWorkerIdle is how long a probe goroutine waits for another turn before it
// exits.
const probeWorkerIdle = time.Second

// turnReq is a turn handed to a probe goroutine.
type turnReq struct {
	e     *entry
	woken bool
}

// startTurn hands e's turn to a probe goroutine waiting for one, or starts one.
// A probe goroutine runs turns until none comes for probeWorkerIdle: at thousands
// of probes a second, one started per probe cost the runtime a new goroutine and
// a stack, grown during each probe, per probe.
func (s *Scheduler) startTurn(ctx context.Context, e *entry, woken bool) {
	select {
	case s.due.work <- turnReq{e, woken}:
		return
	default:
	}
	s.wg.Add(1)
	go s.probeWorker(ctx, turnReq{e, woken})
}

// probeWorker runs turn r, then the turns handed to it, until none comes for
// probeWorkerIdle or ctx ends.
func (s *Scheduler) probeWorker(ctx context.Context, r turnReq) {
	defer s.wg.Done()
	idle := time.NewTimer(probeWorkerIdle)
	defer idle.Stop()
	for {
		// A goroutine handed a turn (or just started for one) runs next, ahead of
		// the probes under way whose responses have arrived: on a saturated core new
		// probes then kept starting while those waited, until a probe took a second
		// and the probe slots ran out. Yielding first queues the new probe behind
		// them (BenchmarkProber, 100,000 checks on one core: lag p99 0 in three runs
		// of three, against 0-2.9 s without).
		runtime.Gosched()
		s.runTurn(r.e, r.woken)
		idle.Reset(probeWorkerIdle)
		select {
		case r = <-s.due.work:
		case <-idle.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// runTurn runs one turn of e and queues it again, due when the turn says, or
// finishes it when the check was released, the scheduler stopped or the turn
// panicked.
func (s *Scheduler) runTurn(e *entry, woken bool) {
	defer s.wg.Done()
	next, ok := time.Time{}, false
	defer func() {
		if r := recover(); r != nil {
			log.Errorf("check %s: scheduler panicked: %v", e.spec.Name, r)
			ok = false
		}
		q := &s.due
		q.mu.Lock()
		defer q.mu.Unlock()
		e.turn.busy = false
		if !ok || q.closed || e.ctx.Err() != nil {
			q.finishLocked(e)
			return
		}
		q.pushLocked(e, next)
	}()
	next, ok = s.turn(e, woken)
}

// turn asks the Placer whether e is probed here and, if so, probes it once and
// records the result. It returns when the check is due next (one interval after
// the probe ended, Route 53 counting the interval from the response), or false
// when the check's context ended.
func (s *Scheduler) turn(e *entry, woken bool) (next time.Time, ok bool) {
	spec, t := e.spec, &e.turn
	ctx := e.ctx
	if ctx.Err() != nil {
		return time.Time{}, false
	}
	if t.checker == nil {
		t.checker = s.buildChecker(spec)
		t.last = budget(spec) // before the first probe, the most it can take
	}
	interval := effectiveInterval(spec)
	s.due.mu.Lock()
	here, resume := t.here, t.resume
	s.due.mu.Unlock()
	if woken {
		// Placed elsewhere until now: probe at once if placed here now, else keep
		// the due time it had.
		if here || !s.placed(spec) {
			return resume, true
		}
	} else if !s.placed(spec) {
		s.setHere(e, false)
		return time.Now().Add(interval), true
	}
	s.setHere(e, true)
	due := time.Now()
	if s.slots.acquire(ctx, due, waitKey(due, t.last)) != nil {
		return time.Time{}, false
	}
	s.started(e, time.Since(due))
	took, ph, err := s.probe(ctx, t.checker, spec)
	s.slots.release()
	t.last = took
	fdReserve.fill()
	if ctx.Err() != nil {
		return time.Time{}, false
	}
	// The next probe is due one interval after this one ended, however long
	// recording it takes (a publication can wait for others).
	next = time.Now().Add(interval)
	if err != nil && isLocal(err) {
		s.skipped(e, err)
	} else {
		s.record(e, err, took, ph)
	}
	return next, true
}

func (s *Scheduler) setHere(e *entry, here bool) {
	s.due.mu.Lock()
	e.turn.here = here
	s.due.mu.Unlock()
}

// buildChecker builds spec's probe. A definition that cannot be probed fails every
// probe, saying why, so the check goes down and the status page shows the reason.
func (s *Scheduler) buildChecker(spec *Spec) Checker {
	newChecker := s.NewChecker
	if newChecker == nil {
		newChecker = func(sp *Spec) (Checker, error) { return NewChecker(sp, UserAgent("")) }
	}
	checker, err := newChecker(spec)
	if err != nil {
		log.Errorf("check %s: %v", spec.Name, err)
		checker = CheckFunc(func(context.Context) error { return err })
	}
	return checker
}

// dueHeap orders queued checks by due time.
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].turn.due.Before(h[j].turn.due) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].turn.qi, h[j].turn.qi = i, j
}
func (h *dueHeap) Push(x any) {
	e := x.(*entry)
	e.turn.qi = len(*h)
	*h = append(*h, e)
}
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.turn.qi = -1
	return e
}
