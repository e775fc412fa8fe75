package health

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/healthroute/healthroute/internal/ratelog"
)

var log = clog.NewWithPlugin("healthroute")

// MinMaxInFlight is the least the automatic bound on probes in flight allows; a
// larger configuration gets more (see Scheduler.MaxInFlight).
const MinMaxInFlight = 256

// lateAfter is how long after its due time a probe must start for the scheduler to
// count it as late and log it.
const lateAfter = time.Second

// logEvery spaces the scheduler's repeated warnings (late probes, local errors);
// the lines say "a minute".
const logEvery = time.Minute

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
	LastLag     time.Duration // how long after its due time the last probe started
	LastPhases  Phases        // the last probe's connect, TLS, first byte and total
	Probes      uint64
	Failures    uint64
	LocalErrors uint64 // probes that could not run for this process's own lack of resources
}

// Observer is told of every probe result and state change; metrics hang off it.
// Its methods are called from probe goroutines and must not block.
type Observer interface {
	// Started is told when a probe starts and how long after its due time: the
	// wait for a free slot among the probes in flight.
	Started(spec *Spec, lag time.Duration)
	// Probed is told of each probe's result.
	Probed(spec *Spec, err error, took time.Duration)
	// Skipped is told of a probe that had no result because this process lacked a
	// resource (see IsLocal); the check's state did not move.
	Skipped(spec *Spec, err error)
	Changed(spec *Spec, down bool)
}

// Aggregator combines this instance's view of each check with other instances'
// (docs/routing.md#quorum: a quorum of the reachable checkers). Without one, the local view
// is published as it is.
type Aggregator interface {
	// Local is told this instance's status of fp after each of its probes, with
	// Verdict set once the check's threshold window has completed. It is called
	// holding the Scheduler's lock: it must not call the Scheduler.
	Local(fp string, st Status)
	// Status returns the status to publish for fp, given the local one.
	Status(fp string, local Status) Status
}

// Placer is an Aggregator that chooses which instances probe each check (a
// fleet's placement of checkers). The scheduler asks it before each probe; a
// check this instance is not a checker of is not probed, and asked about again
// one interval later.
type Placer interface {
	Probes(spec *Spec) bool
}

// Scheduler runs the probes of every acquired check and publishes snapshots. One
// Scheduler serves a whole process; checks are reference-counted by fingerprint, so a
// reload that keeps a check keeps its state and its schedule.
//
// Each check probes once after a jittered start delay, then again one interval after
// each probe ends (Route 53 counts the interval from the response). At most
// MaxInFlight probes run at once, each under its budget (the check's timeout or the
// type's default), so hung endpoints cost one slot each until their budget runs out.
// Checks that come due while every slot is taken wait, served by due time plus
// CostWeight times their previous probe's duration, so quick checks do not queue
// behind hung ones; how long they waited is their lag (Observer.Started), and how
// many wait now is the Backlog.
//
// Out of file descriptors, a probe takes one of the ReserveFDs kept for probes. A
// probe whose connection fails for a reason of this process's own (IsLocal: out of
// file descriptors, buffers or source ports) has no result: the check keeps its
// state, Observer.Skipped counts it and the log says so at most once a minute.
// A snapshot is published whenever a check's published status changes: at once
// while changes are rare, and under a burst of them (start-up) at most once a short
// gap, each publication covering every change since the last (see publishSoon); it
// copies only the shards they touch.
type Scheduler struct {
	// MaxInFlight bounds the probes running at once; SetMaxInFlight changes it
	// later. 0 fits the bound to the checks (AutoMaxInFlight).
	MaxInFlight int
	NewChecker  func(*Spec) (Checker, error)               // builds a probe; nil: NewChecker with UserAgent("")
	Jitter      func(interval time.Duration) time.Duration // first-probe delay; nil: uniform in [0, interval)
	Observer    Observer                                   // optional
	Aggregator  Aggregator                                 // optional: combines other instances' views (fleet)

	mu     sync.Mutex
	checks map[string]*entry // by fingerprint
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  limiter
	due    dueQueue            // the checks waiting for their next probe, by due time
	short  bool                // the bound is below what the checks may need (warned once)
	dirty  map[string]struct{} // fingerprints whose published status may be stale
	all    bool                // every fingerprint is stale (Republish)
	want   uint64              // publication requests so far
	served uint64              // requests covered by a finished publication

	logs     ratelog.Limiter // repeated warnings: kinds "late" and "local", one a logEvery
	logsOnce sync.Once

	restore map[string]Saved // saved states for checks not acquired yet (Restore)

	pace  pacer      // spaces the publications of probe results
	pubMu sync.Mutex // serialises publications and subscriber calls
	gen   uint64
	snap  atomic.Pointer[Snapshot] // stored under pubMu
	subs  map[int]func(*Snapshot)
	next  int
}

type entry struct {
	spec   *Spec
	refs   int
	ctx    context.Context // ends when the check is released or the scheduler stopped
	cancel context.CancelFunc
	done   chan struct{} // closed once no probe of the check runs or will run
	turn   turn          // its place in the due queue and what its probes carry over
	info   Info
	window int  // results counted since the threshold window (re)started
	flip   bool // the state flipped since then
	// restored says that the state came from a saved one (Restore) and no window
	// restarted since: it counts as a verdict.
	restored bool
	judged   time.Time // when the state last rested on a verdict; zero: never
	// windows counts the threshold windows restarted (RestartWindows), and
	// probeWindow is its value when the probe under way started: a probe that
	// started before a restart does not count in the new window.
	windows, probeWindow uint64
}

// Start starts the scheduler; checks acquired before Start begin probing now.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil {
		return
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.resizeLocked()
	fdReserve.fill()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.dispatch(s.ctx)
	}()
	for _, e := range s.checks {
		s.startLocked(e)
	}
}

// Stop cancels every probe, waits for every goroutine the scheduler started and
// closes the descriptors Start reserved for probes.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.stopPace()
	s.wg.Wait()
	fdReserve.drain()
}

// Acquire adds a reference to each probed spec, starting the ones not yet running.
// A spec whose fingerprint is already running keeps that check's state and
// schedule. Specs that are disabled or calculated are skipped (calculated children
// are acquired through the spec list the caller gives, see Flatten).
func (s *Scheduler) Acquire(specs []*Spec) {
	if want := s.acquire(specs); want > 0 {
		s.flush(want) // publish the checks that start from a saved state
	}
}

// acquire is Acquire but for the publication, whose request number it returns (0:
// none needed).
func (s *Scheduler) acquire(specs []*Spec) (want uint64) {
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
		e := &entry{spec: sp, refs: 1, info: Info{Spec: sp}, turn: turn{qi: -1}}
		s.checks[fp] = e
		if s.restoreLocked(fp, e) {
			want = s.markLocked(fp)
		}
		if s.ctx != nil {
			s.startLocked(e)
		}
	}
	if s.ctx != nil {
		s.resizeLocked()
	}
	return want
}

// SetMaxInFlight changes MaxInFlight (0: automatic) while the scheduler runs: a
// reload's max_probes. Probes running past a lowered bound finish; no new one
// starts until the count is below it.
func (s *Scheduler) SetMaxInFlight(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 0 {
		n = 0
	}
	s.MaxInFlight = n
	if s.ctx != nil {
		s.resizeLocked()
	}
}

// MaxInFlightNow reports the bound on probes in flight in force now: MaxInFlight,
// or the automatic one.
func (s *Scheduler) MaxInFlightNow() int { return s.slots.cap() }

// Backlog reports how many checks are past their due time, waiting for a slot.
func (s *Scheduler) Backlog() int { return s.slots.waiting() }

// LongestWait reports how long the check that has waited longest for a slot has
// waited so far, 0 when none waits: the lag a probe would have if it started now.
func (s *Scheduler) LongestWait() time.Duration {
	if t := s.slots.oldest(); !t.IsZero() {
		return time.Since(t)
	}
	return 0
}

// AutoMaxInFlight is the bound on probes in flight for a configuration whose checks
// could hold demand slots at once if every target hung until the probe's budget
// ran out (the sum over checks of budget/(budget+interval)): twice that, for the
// start-up burst and jitter, and at least MinMaxInFlight. It is capped at
// half of nofile, the process's file descriptor limit (0: none), since each probe
// holds a socket and the listeners need the rest; under that cap checks run late,
// visibly, rather than fail to open sockets.
func AutoMaxInFlight(demand float64, nofile uint64) int {
	n := max(MinMaxInFlight, int(math.Ceil(2*demand)))
	if nofile > 0 {
		n = min(n, max(MinMaxInFlight/4, int(min(nofile/2, math.MaxInt32))))
	}
	return n
}

// demand is the share of time sp can hold a probe slot when its target hangs: its
// budget over its budget plus its interval (the interval counts from the probe's
// end).
func demand(sp *Spec) float64 {
	b := budget(sp)
	return float64(b) / float64(b+effectiveInterval(sp))
}

// resizeLocked sets the bound on probes in flight from MaxInFlight or, when that is
// 0, from the checks held; it warns when the bound is below what they may need.
// s.mu must be held.
func (s *Scheduler) resizeLocked() {
	var d float64
	for _, e := range s.checks {
		d += demand(e.spec)
	}
	need := min(AutoMaxInFlight(d, 0), len(s.checks))
	n, why := s.MaxInFlight, "max_probes"
	if n <= 0 {
		nofile := nofileLimit()
		n, why = AutoMaxInFlight(d, nofile), fmt.Sprintf("half the file descriptor limit, %d", nofile)
	}
	s.slots.resize(n)
	short := n < need
	if short && !s.short {
		log.Warningf("at most %d probes in flight (%s), below the %d these %d checks may need when their targets hang: checks will run late",
			n, why, need, len(s.checks))
	}
	s.short = short
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
				s.due.stop(e)
				stopped = append(stopped, e)
			}
		}
	}
	if s.ctx != nil {
		s.resizeLocked()
	}
	s.mu.Unlock()
	for _, e := range stopped {
		<-e.done
	}
	if want > 0 {
		s.flush(want)
	}
}

// running reports how many probed checks the scheduler holds.
func (s *Scheduler) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.checks)
}

// InFlight reports how many probes are running now (at most MaxInFlightNow, but for
// a bound lowered under running probes).
func (s *Scheduler) InFlight() int { return s.slots.inUse() }

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

// infos returns what the scheduler knows of every probed check, sorted by name.
func (s *Scheduler) infos() []Info {
	s.mu.Lock()
	out := make([]Info, 0, len(s.checks))
	for _, e := range s.checks {
		out = append(out, e.info)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name < out[j].Spec.Name })
	return out
}

// Replace tells the scheduler that its Placer may place checks differently now
// (fleet members came or went): the checks not probed here ask it again at once,
// so that a new checker starts without waiting for its next due time.
func (s *Scheduler) Replace() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due.wakeAll(time.Now())
}

// placed reports whether this instance probes spec now: always, unless the
// Aggregator is a Placer that places the check elsewhere.
func (s *Scheduler) placed(spec *Spec) bool {
	s.mu.Lock()
	pl, ok := s.Aggregator.(Placer)
	s.mu.Unlock()
	return !ok || pl.Probes(spec)
}

// costWeight orders the checks waiting for a probe slot: by due time plus
// costWeight times how long the check's previous probe held its slot. A check
// whose target answers at once is not kept waiting behind hung ones; a check whose
// probes hang waits at most costWeight times their duration longer than in due
// order, and only while quicker checks fill every slot.
const costWeight = 100

// waitKey is the place in line of a check due at due whose previous probe took
// took (its budget before its first).
func waitKey(due time.Time, took time.Duration) time.Time {
	return due.Add(costWeight * took)
}

// effectiveInterval is spec's interval, defaulted and held to MinInterval (parse
// refuses less; a hand-built spec must not spin).
func effectiveInterval(spec *Spec) time.Duration {
	switch {
	case spec.Interval <= 0:
		return DefaultInterval
	case spec.Interval < MinInterval:
		return MinInterval
	}
	return spec.Interval
}

// started notes a probe's lag and logs, at most once a minute, that probes ran late.
func (s *Scheduler) started(e *entry, lag time.Duration) {
	s.mu.Lock()
	e.info.LastLag = lag
	e.probeWindow = e.windows
	s.mu.Unlock()
	if s.Observer != nil {
		s.Observer.Started(e.spec, lag)
	}
	if lag < lateAfter {
		return
	}
	if ok, held := s.limitedLogs().Allow("late", time.Now()); ok {
		log.Warningf("probes started late (%d since the last such line, at most one a minute): check %s by %s; %d checks waiting for one of %d probe slots (max_probes)",
			held.Count+1, e.spec.Name, lag.Round(time.Millisecond), s.Backlog(), s.MaxInFlightNow())
	}
}

// skipped counts a probe that had no result for a local resource error; the check
// keeps its state.
func (s *Scheduler) skipped(e *entry, err error) {
	s.mu.Lock()
	e.info.LocalErrors++
	s.mu.Unlock()
	if s.Observer != nil {
		s.Observer.Skipped(e.spec, err)
	}
	if ok, held := s.limitedLogs().Allow("local", time.Now()); ok {
		log.Errorf("probes could not run for lack of local resources, not counted against their checks (%d since the last such line, at most one a minute): check %s: %v",
			held.Count+1, e.spec.Name, err)
	}
}

// limitedLogs returns the limiter of the scheduler's repeated warnings.
func (s *Scheduler) limitedLogs() *ratelog.Limiter {
	s.logsOnce.Do(func() { s.logs.Window, s.logs.Burst = logEvery, 1 })
	return &s.logs
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
func (s *Scheduler) probe(ctx context.Context, c Checker, spec *Spec) (took time.Duration, ph Phases, err error) {
	b := budget(spec)
	start := time.Now()
	var tr *trace
	if boundsOwnWaits(c) {
		pc := &probeCtx{Context: ctx, deadline: start.Add(b)}
		tr, ctx = &pc.tr, pc
		tr.clock.start = start
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b)
		defer cancel()
		tr = new(trace)
		ctx = withTrace(ctx, tr, spec.Type)
	}
	defer func() {
		if r := recover(); r != nil {
			log.Errorf("check %s: probe panicked: %v", spec.Name, r)
			err = errors.New("probe panicked")
		}
		took = time.Since(start)
		ph = tr.clock.phases(took)
	}()
	err = c.Check(ctx)
	if err != nil && tr.local.Load() {
		err = localError{err}
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
		// Report the budget, not whatever the interrupted read said.
		err = fmt.Errorf("no result within %s: %w", b, err)
	}
	return 0, Phases{}, err
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
func (s *Scheduler) record(e *entry, err error, took time.Duration, ph Phases) {
	spec := e.spec
	fp := spec.Fingerprint()
	fails, passes := thresholds(spec)
	s.mu.Lock()
	in := &e.info
	now := time.Now()
	in.Probes++
	in.LastProbe, in.LastLatency, in.LastPhases = now, took, ph
	if err != nil {
		in.Failures++
		in.LastErr = err.Error()
	} else {
		in.LastErr = ""
	}
	before, seen := in.State, in.Seen
	// A probe that started before its check's window restarted (this process
	// stalled meanwhile) is not counted: the new window rests on later probes only.
	if ok, counts := outcome(spec, err); counts && e.probeWindow == e.windows {
		in.State = in.State.Observe(ok, fails, passes)
		e.window++
	}
	in.Seen = true
	down := in.State.Down
	changed := down != before.Down
	if changed {
		in.LastChange = now
		e.flip = true
	}
	local := Status{Down: down, Seen: true, Since: in.LastChange, Verdict: e.window >= fails || e.flip}
	local.Restored = e.restored && !local.Verdict
	if local.Verdict {
		e.judged = now
	}
	var want uint64
	if changed || !seen || s.Aggregator != nil {
		// With an Aggregator the quorum may move on any report; flush re-decides
		// and publishes only if the aggregate status changed.
		want = s.markLocked(fp)
	}
	if s.Aggregator != nil {
		// Told under s.mu, so that a RestartWindows (which takes s.mu) is never
		// overtaken by a verdict computed before it.
		s.Aggregator.Local(fp, local)
	}
	s.mu.Unlock()

	if s.Observer != nil {
		s.Observer.Probed(spec, err, took)
		if po, ok := s.Observer.(PhaseObserver); ok {
			po.Phased(spec, ph)
		}
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
		s.publishSoon(want)
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

// RestartWindows makes the given checks start a new threshold window: their state
// stays, but the results counted toward a flip are forgotten, and their statuses
// carry no Verdict until failure_threshold more results (or a flip) are counted.
// An Aggregator calls it for the checks whose last probe grew older than the
// results may be trusted (the process stalled, or the probes fell behind): a
// verdict must rest on probes none of which is older than that. A probe under
// way, started before, does not count in the new window.
func (s *Scheduler) RestartWindows(fps []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fp := range fps {
		if e, ok := s.checks[fp]; ok {
			e.info.State = State{Down: e.info.State.Down}
			e.window, e.flip, e.restored = 0, false, false
			e.windows++
		}
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
