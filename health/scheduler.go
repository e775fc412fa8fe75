package health

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

var log = clog.NewWithPlugin("healthroute")

// DefaultMaxInFlight bounds the probes running at once across every check.
const DefaultMaxInFlight = 256

// Info is what the scheduler knows of one probed check beyond its state: for the
// status page, the JSON API and metrics.
type Info struct {
	Spec        *Spec
	State       State
	Seen        bool
	LastErr     string        // "" after a pass
	LastLatency time.Duration // duration of the last probe
	LastProbe   time.Time     // end of the last probe
	LastChange  time.Time     // when State.Down last flipped
	Probes      uint64
	Failures    uint64
}

// Observer is told of every probe result and state change; metrics hang off it.
// Its methods are called from probe goroutines and must not block.
type Observer interface {
	Probed(spec *Spec, err error, took time.Duration)
	Changed(spec *Spec, down bool)
}

// Aggregator combines this instance's view of each check with other instances'
// (ROUTE53.md 2.3: a quorum of the reachable checkers). Without one, the local view
// is published as it is.
type Aggregator interface {
	// Local is told this instance's status of fp after each of its probes.
	Local(fp string, st Status)
	// Status returns the status to publish for fp, given the local one.
	Status(fp string, local Status) Status
}

// Scheduler runs the probes of every acquired check and publishes snapshots. One
// Scheduler serves a whole process; checks are reference-counted by fingerprint, so a
// reload that keeps a check keeps its state and its schedule.
type Scheduler struct {
	MaxInFlight int                                        // probes running at once; 0: DefaultMaxInFlight
	NewChecker  func(*Spec) (Checker, error)               // builds a probe; nil: NewChecker with UserAgent("")
	Jitter      func(interval time.Duration) time.Duration // first-probe delay; nil: uniform in [0, interval)
	Observer    Observer                                   // optional
	Aggregator  Aggregator                                 // optional: combines other instances' views (fleet)

	mu     sync.Mutex
	checks map[string]*entry // by fingerprint
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{}
	gen    uint64

	pubMu sync.Mutex // serialises publications and subscriber calls
	snap  *Snapshot
	subs  map[int]func(*Snapshot)
	next  int
}

type entry struct {
	spec   *Spec
	refs   int
	cancel context.CancelFunc
	done   chan struct{}
	info   Info
}

// Start starts the scheduler; checks acquired before Start begin probing now.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil {
		return
	}
	n := s.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	s.sem = make(chan struct{}, n)
	s.ctx, s.cancel = context.WithCancel(ctx)
	for _, e := range s.checks {
		s.startLocked(e)
	}
}

// Stop cancels every probe and waits for every goroutine the scheduler started.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Acquire adds a reference to each probed spec, starting the ones not yet running.
// Specs that are disabled or calculated are skipped (calculated children are
// acquired through the spec list the caller gives, see Flatten).
func (s *Scheduler) Acquire(specs []*Spec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checks == nil {
		s.checks = map[string]*entry{}
	}
	for _, sp := range specs {
		if !sp.Probed() {
			continue
		}
		fp := sp.Fingerprint()
		if e, ok := s.checks[fp]; ok {
			e.refs++
			continue
		}
		e := &entry{spec: sp, refs: 1, info: Info{Spec: sp}}
		s.checks[fp] = e
		if s.ctx != nil {
			s.startLocked(e)
		}
	}
	return nil
}

// Release drops a reference to each spec; a check with none left stops probing and
// its state is forgotten.
func (s *Scheduler) Release(specs []*Spec) {
	s.mu.Lock()
	var stopped []*entry
	for _, sp := range specs {
		if !sp.Probed() {
			continue
		}
		e, ok := s.checks[sp.Fingerprint()]
		if !ok {
			continue
		}
		if e.refs--; e.refs == 0 {
			delete(s.checks, sp.Fingerprint())
			if e.cancel != nil {
				e.cancel()
				stopped = append(stopped, e)
			}
		}
	}
	s.mu.Unlock()
	for _, e := range stopped {
		<-e.done
	}
	if len(stopped) > 0 {
		s.publish()
	}
}

// Running reports how many probed checks the scheduler holds.
func (s *Scheduler) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.checks)
}

// Info returns what the scheduler knows of the check with fingerprint fp.
func (s *Scheduler) Info(fp string) (Info, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.checks[fp]
	if !ok {
		return Info{}, false
	}
	return e.info, true
}

// Snapshot returns the latest published snapshot (nil before the first).
func (s *Scheduler) Snapshot() *Snapshot {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	return s.snap
}

// Subscribe calls fn with the current snapshot now and with each later one, in order,
// until the returned function is called.
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

func (s *Scheduler) startLocked(e *entry) {
	ctx, cancel := context.WithCancel(s.ctx)
	e.cancel, e.done = cancel, make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(e.done)
		s.run(ctx, e)
	}()
}

// run probes one check until ctx ends: after a jittered start, then each interval
// after the previous probe ended (Route 53 counts the interval from the response).
func (s *Scheduler) run(ctx context.Context, e *entry) {
	spec := e.spec
	newChecker := s.NewChecker
	if newChecker == nil {
		newChecker = func(sp *Spec) (Checker, error) { return NewChecker(sp, UserAgent("")) }
	}
	checker, err := newChecker(spec)
	if err != nil {
		log.Errorf("check %s: %v", spec.Name, err)
		return
	}
	wait := s.jitter(spec.Interval)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		err, took := s.probe(ctx, checker, spec)
		<-s.sem
		if ctx.Err() != nil {
			return
		}
		s.record(e, err, took)
		t.Reset(spec.Interval)
	}
}

func (s *Scheduler) jitter(interval time.Duration) time.Duration {
	if s.Jitter != nil {
		return s.Jitter(interval)
	}
	if interval <= 0 {
		return 0
	}
	return rand.N(interval)
}

// probe runs one probe under the check's budget; a panic in a checker fails the probe.
func (s *Scheduler) probe(ctx context.Context, c Checker, spec *Spec) (err error, took time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, budget(spec))
	defer cancel()
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			log.Errorf("check %s: probe panicked: %v", spec.Name, r)
			err = errors.New("probe panicked")
		}
		took = time.Since(start)
	}()
	return c.Check(ctx), 0
}

// record feeds one result into the check's state machine and publishes a snapshot
// when the status or the first-result flag changed.
func (s *Scheduler) record(e *entry, err error, took time.Duration) {
	spec := e.spec
	s.mu.Lock()
	in := &e.info
	now := time.Now()
	in.Probes++
	in.LastProbe, in.LastLatency = now, took
	if err != nil {
		in.Failures++
		in.LastErr = err.Error()
	} else {
		in.LastErr = ""
	}
	before, seen := in.State, in.Seen
	if ok, counts := outcome(spec, err); counts {
		in.State = in.State.Observe(ok, spec.Fails, spec.Passes)
	}
	in.Seen = true
	down := in.State.Down
	changed := down != before.Down
	if changed {
		in.LastChange = now
	}
	s.mu.Unlock()

	if s.Aggregator != nil {
		s.Aggregator.Local(spec.Fingerprint(), Status{Down: down, Seen: true, Since: in.LastChange})
		changed = true // the quorum may move on any report; publish re-decides
	}
	if s.Observer != nil {
		s.Observer.Probed(spec, err, took)
		if changed {
			s.Observer.Changed(spec, down)
		}
	}
	if changed {
		if down {
			log.Infof("check %s: %s is now failing: %v", spec.Name, spec.Target, err)
		} else {
			log.Infof("check %s: %s is passing again", spec.Name, spec.Target)
		}
	}
	if changed || !seen {
		s.publish()
	}
}

// outcome maps a probe error to a pass or a failure; counts is false when the
// result must not move the state (insufficient data treated as last known).
func outcome(spec *Spec, err error) (ok, counts bool) {
	if errors.Is(err, ErrNoData) {
		switch spec.NoData {
		case NoDataHealthy:
			return true, true
		case NoDataUnhealthy:
			return false, true
		}
		return false, false
	}
	return err == nil, true
}

// Republish builds and publishes a snapshot now: for an Aggregator whose inputs
// from other instances changed.
func (s *Scheduler) Republish() { s.publish() }

// publish builds a snapshot of every check's current status and hands it to the
// subscribers. Publications are serialised, so subscribers see them in order.
func (s *Scheduler) publish() {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.mu.Lock()
	states := make(map[string]Status, len(s.checks))
	for fp, e := range s.checks {
		st := Status{Down: e.info.State.Down, Seen: e.info.Seen, Since: e.info.LastChange}
		if s.Aggregator != nil {
			st = s.Aggregator.Status(fp, st)
		}
		states[fp] = st
	}
	s.gen++
	snap := &Snapshot{Gen: s.gen, states: states}
	s.mu.Unlock()
	s.snap = snap
	for _, fn := range s.subs {
		fn(snap)
	}
}

// Flatten returns specs and, depth first, every check they depend on (the children
// of calculated checks), each once.
func Flatten(specs []*Spec) []*Spec {
	seen := map[*Spec]bool{}
	var out []*Spec
	var walk func(*Spec)
	walk = func(sp *Spec) {
		if seen[sp] {
			return
		}
		seen[sp] = true
		out = append(out, sp)
		for _, c := range sp.Children {
			walk(c)
		}
	}
	for _, sp := range specs {
		walk(sp)
	}
	return out
}
