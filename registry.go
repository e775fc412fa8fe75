package healthroute

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/history"
	"github.com/healthroute/healthroute/operator"
	"github.com/healthroute/healthroute/routing"
)

// registry is the process-wide state shared by every healthroute block and carried
// across reloads: the scheduler, whose checks are keyed by fingerprint, and the fleet
// member when a block configures one. Blocks acquire it in OnStartup and release it
// in OnShutdown; the last release stops the scheduler, leaves the fleet and waits for
// their goroutines.
type registry struct {
	mu    sync.Mutex
	refs  int
	cfgs  map[*blockConfig]int // the blocks holding a reference, for max_probes
	sched *health.Scheduler
	op    operator.Operator // blocks, overrides and API listeners
	fl    *fleet.Fleet      // nil without a fleet
	hist  *historyKeeper    // records status changes into histories; nil when nothing runs
	unsub func()            // ends hist's subscription
	state *stateKeeper      // keeps the checks' judged states in the data_dir; nil without one
	// notifiers are the running webhooks, by URL and secret, shared by the blocks
	// (and across reloads) that configure the same one.
	notifiers map[string]*sharedNotifier

	// The replicated control state, opened by the first block with routing
	// controls (ctlCfgs: those blocks, in acquire order) and kept across reloads.
	node    *control.Node
	nodeCfg control.Config
	ctlCfgs []*blockConfig

	// A reload starts the new instance's blocks before it knows it will succeed;
	// when a later block (ours or another plugin's) fails to start, caddy discards
	// the new instance without shutting down the blocks it started. pending holds
	// those, from the old instance's OnRestart until its OnShutdown (success) or
	// OnRestartFailed (undo them).
	reloading bool
	pending   []*HealthRoute
	live      []*HealthRoute // every started handler not yet shut down, the pending ones included
	// Reloads run one at a time. A reload asked for while one runs (SIGUSR1, the
	// reload plugin and the route53 watcher all restart the instance, and caddy does
	// not serialise them) is refused at its OnRestart, before it builds anything;
	// refused counts the refusals whose OnRestartFailed is still to come, and again
	// says that a reload from the Corefile on disk must follow the running one.
	refused int
	again   bool
	follow  func() // runs the reload that again asks for; nil: none (tests)

	api apiRegistry // the Route 53-compatible API's listeners and blocks

	// The process-wide values below are read and written through shared, the
	// running process's registry, whichever registry a block holds.

	// histories is the process's check histories: every probe result and every
	// change of a check's published status (after the fleet's quorum, before invert
	// and overrides), by fingerprint, like the scheduler's checks.
	histories *history.Store
	// parsed is set when a block has been parsed and built, and cleared by the first
	// OnStartup after it: CoreDNS parses every block before starting any, so that one
	// returns to the OS what parsing them all left behind (the Corefile's tokens, the
	// configuration's intermediate maps), which for a large configuration is several
	// times what the routing keeps, and which the runtime would otherwise hold for
	// minutes.
	parsed       atomic.Bool
	failing      failingOpen // the groups failing open, for the metrics and the status page
	counting     counterSets // every block's query counters, for scrapes
	restarting   atomic.Bool // a reload started by a route53 watcher runs
	fleetMetrics sync.Once   // registers the fleet's metric families the first time a fleet starts
}

// shared is the registry of the running process. Tests build their own for the
// blocks' shared state; the process-wide values are always shared's.
var shared = &registry{
	histories: history.New(),
	failing:   failingOpen{byBlock: map[*routing.Resolver]map[[3]string]bool{}, count: map[[3]string]int{}, spans: map[[3]string][]openSpan{}},
}

func (r *registry) acquire(cfg *blockConfig) *health.Scheduler {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs == 0 {
		agent := health.UserAgent("")
		r.sched = &health.Scheduler{NewChecker: func(s *health.Spec) (health.Checker, error) { return health.NewChecker(s, agent) }}
		r.hist = &historyKeeper{sched: r.sched}
		r.sched.Observer = probeObserver{fl: &r.hist.fl} // before Start: the fleet learns each failure's reason
		if cfg.Fleet != nil {
			if r.fl = startFleet(cfg.Fleet, r.sched); r.fl != nil {
				agent = health.UserAgent(r.fl.Name()) // probes say which checker sent them
				r.hist.fl.Store(r.fl)
			}
		}
		r.unsub = r.sched.Subscribe(r.hist.observe)
		r.hist.start()
		r.sched.Start(context.Background())
	} else if cfg.Fleet != nil && r.fl == nil {
		// A later block (or a reload) brings the first fleet block: join now. Checks
		// already probing keep the User-Agent they started with.
		r.fl = startFleet(cfg.Fleet, r.sched)
		r.hist.fl.Store(r.fl)
		r.sched.Republish()
	} else if cfg.Fleet != nil && r.fl.Name() != cfg.Fleet.Name {
		log.Warningf("fleet: already running as %s; a changed fleet block takes effect on restart", r.fl.Name())
	}
	r.refs++
	if r.cfgs == nil {
		r.cfgs = map[*blockConfig]int{}
	}
	r.cfgs[cfg]++
	r.sched.SetMaxInFlight(r.maxProbesLocked())
	r.refreshControlsLocked()
	return r.sched
}

// maxProbesLocked is the max_probes in force: the largest any running block sets,
// 0 (fitted to the checks) when none sets one. A reload's blocks replace the old
// ones' values as those release. r.mu must be held.
func (r *registry) maxProbesLocked() int {
	n := 0
	for cfg := range r.cfgs {
		n = max(n, cfg.MaxInFlight)
	}
	return n
}

func (r *registry) scheduler() *health.Scheduler {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sched
}

// startFleet joins the fleet and makes sched decide by its quorum; when the fleet
// cannot start (its address is taken), the instance judges alone and says so.
func startFleet(fc *fleet.Config, sched *health.Scheduler) *fleet.Fleet {
	f, err := fleet.New(*fc)
	if err == nil {
		f.OnChange, f.OnChecks, f.OnStale, f.OnMoved = sched.Republish, sched.RepublishChecks, sched.RestartWindows, sched.Replace
		err = f.Start()
	}
	if err != nil {
		log.Errorf("fleet: %v: judging health from this instance's probes alone", err)
		return nil
	}
	sched.Aggregator = f
	registerFleetMetrics()
	return f
}

// fleet returns the running fleet member, nil without one: for the status page.
func (r *registry) fleet() *fleet.Fleet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fl
}

// release drops the reference that acquire(cfg) took.
func (r *registry) release(cfg *blockConfig) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfgs[cfg]--; r.cfgs[cfg] <= 0 {
		delete(r.cfgs, cfg)
	}
	if r.sched != nil {
		r.sched.SetMaxInFlight(r.maxProbesLocked())
	}
	r.refreshControlsLocked()
	if r.refs--; r.refs == 0 {
		r.unsub()
		r.sched.Stop()
		r.hist.close() // saves the histories a last time, with a history_dir
		if r.state != nil {
			r.state.close()
		}
		r.sched, r.hist, r.unsub, r.state = nil, nil, nil, nil
		if r.fl != nil {
			r.fl.Stop() // leaves, so the others drop this member at once
			r.fl = nil
		}
	}
}

// useHistoryDir keeps the histories in dir (the api's history_dir) from now on.
func (r *registry) useHistoryDir(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hist != nil {
		r.hist.useDir(dir)
	}
}

// useDataDir keeps the checks' judged states in dir (a block's data_dir) from now
// on, and lets the checks acquired after it start from the states saved there. The
// first block with a data_dir sets it for the process; a different one later takes
// effect on restart.
func (r *registry) useDataDir(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.sched == nil:
	case r.state == nil:
		r.state = startStateKeeper(r.sched, dir)
	case r.state.dir != dir:
		log.Warningf("data_dir %s: the check states are already kept in %s; a changed data_dir takes effect on restart", dir, r.state.dir)
	}
}

// noteCheckStates takes the scheduler's judged states into the data_dir's keeper
// before a block releases its checks.
func (r *registry) noteCheckStates() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != nil {
		r.state.note()
	}
}
