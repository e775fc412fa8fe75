package health

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
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
// (docs/routing.md#quorum: a quorum of the reachable checkers). Without one, the local view
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
//
// Each check probes once after a jittered start delay, then again one interval after
// each probe ends (Route 53 counts the interval from the response). At most
// MaxInFlight probes run at once, each under its budget (the check's timeout or the
// type's default), so hung endpoints cost one slot each until their budget runs out.
// A snapshot is published whenever a check's published status changes; changes that
// arrive while a publication is running are coalesced into the next one, which copies
// only the shards they touch.
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
	dirty  map[string]struct{} // fingerprints whose published status may be stale
	all    bool                // every fingerprint is stale (Republish)
	want   uint64              // publication requests so far
	served uint64              // requests covered by a finished publication

	pubMu sync.Mutex // serialises publications and subscriber calls
	gen   uint64
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
// A spec whose fingerprint is already running keeps that check's state and
// schedule. Specs that are disabled or calculated are skipped (calculated children
// are acquired through the spec list the caller gives, see Flatten).
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
			e.info.Spec = sp // the status page shows the latest definition's name
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

// Release drops a reference to each spec; a check with none left stops probing (its
// running probe is cancelled and waited for) and its state is forgotten. It must
// not be called from a subscriber.
func (s *Scheduler) Release(specs []*Spec) {
	s.mu.Lock()
	var stopped []*entry
	var want uint64
	for _, sp := range specs {
		if !sp.Probed() {
			continue
		}
		fp := sp.Fingerprint()
		e, ok := s.checks[fp]
		if !ok {
			continue
		}
		if e.refs--; e.refs == 0 {
			delete(s.checks, fp)
			want = s.markLocked(fp)
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
	if want > 0 {
		s.flush(want)
	}
}

// Running reports how many probed checks the scheduler holds.
func (s *Scheduler) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.checks)
}

// InFlight reports how many probes are running now (at most MaxInFlight).
func (s *Scheduler) InFlight() int {
	s.mu.Lock()
	sem := s.sem
	s.mu.Unlock()
	return len(sem)
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

// Infos returns what the scheduler knows of every probed check, sorted by name.
func (s *Scheduler) Infos() []Info {
	s.mu.Lock()
	out := make([]Info, 0, len(s.checks))
	for _, e := range s.checks {
		out = append(out, e.info)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name < out[j].Spec.Name })
	return out
}

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

func (s *Scheduler) startLocked(e *entry) {
	if s.ctx.Err() != nil {
		return // stopped: Stop has waited for its goroutines, start no more
	}
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
	defer func() {
		if r := recover(); r != nil {
			log.Errorf("check %s: scheduler panicked: %v", spec.Name, r)
		}
	}()
	newChecker := s.NewChecker
	if newChecker == nil {
		newChecker = func(sp *Spec) (Checker, error) { return NewChecker(sp, UserAgent("")) }
	}
	checker, err := newChecker(spec)
	if err != nil {
		// The definition cannot be probed: fail every probe, saying why, so the check
		// goes down and the status page shows the reason.
		log.Errorf("check %s: %v", spec.Name, err)
		checker = CheckFunc(func(context.Context) error { return err })
	}
	interval := spec.Interval
	switch {
	case interval <= 0:
		interval = DefaultInterval
	case interval < MinInterval:
		interval = MinInterval // parse refuses less; a hand-built spec must not spin
	}
	t := time.NewTimer(s.jitter(interval))
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
		t.Reset(interval)
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
	b := budget(spec)
	ctx, cancel := context.WithTimeout(ctx, b)
	defer cancel()
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			log.Errorf("check %s: probe panicked: %v", spec.Name, r)
			err = errors.New("probe panicked")
		}
		took = time.Since(start)
	}()
	err = c.Check(ctx)
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
		// Report the budget, not whatever the interrupted read said.
		err = fmt.Errorf("no result within %s: %w", b, err)
	}
	return err, 0
}

// thresholds returns spec's failure and recovery thresholds, defaulted: failures
// to DefaultFails, recovery to the failure threshold.
func thresholds(spec *Spec) (fails, passes int) {
	fails, passes = spec.Fails, spec.Passes
	if fails < 1 {
		fails = DefaultFails
	}
	if passes < 1 {
		passes = fails
	}
	return fails, passes
}

// record feeds one result into the check's state machine and publishes a snapshot
// when the published status may have changed.
func (s *Scheduler) record(e *entry, err error, took time.Duration) {
	spec := e.spec
	fp := spec.Fingerprint()
	fails, passes := thresholds(spec)
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
		in.State = in.State.Observe(ok, fails, passes)
	}
	in.Seen = true
	down := in.State.Down
	changed := down != before.Down
	if changed {
		in.LastChange = now
	}
	local := Status{Down: down, Seen: true, Since: in.LastChange}
	var want uint64
	if changed || !seen || s.Aggregator != nil {
		// With an Aggregator the quorum may move on any report; flush re-decides
		// and publishes only if the aggregate status changed.
		want = s.markLocked(fp)
	}
	s.mu.Unlock()

	if s.Aggregator != nil {
		s.Aggregator.Local(fp, local)
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
	} else if err != nil {
		log.Debugf("check %s: probe failed after %s: %v", spec.Name, took, err)
	}
	if want > 0 {
		s.flush(want)
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
