package healthroute

import (
	"context"
	"sync"

	"github.com/healthroute/healthroute/health"
)

type healthSpec = health.Spec

// registry is the process-wide state shared by every healthroute block and carried
// across reloads: the scheduler, whose checks are keyed by fingerprint. Blocks
// acquire it in OnStartup and release it in OnShutdown; the last release stops the
// scheduler and waits for its goroutines.
type registry struct {
	mu    sync.Mutex
	refs  int
	sched *health.Scheduler
	op    operator // blocks, overrides and API listeners (operator.go)
}

// shared is the registry of the running process. Tests build their own.
var shared = &registry{}

func (r *registry) acquire(cfg *Config) *health.Scheduler {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs == 0 {
		r.sched = &health.Scheduler{MaxInFlight: cfg.MaxInFlight, Observer: probeObserver{},
			NewChecker: func(s *health.Spec) (health.Checker, error) {
				c, err := health.NewChecker(s, health.UserAgent(""))
				return countingChecker{c}, err
			}}
		r.sched.Start(context.Background())
	}
	r.refs++
	return r.sched
}

func (r *registry) scheduler() *health.Scheduler {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sched
}

func (r *registry) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs--; r.refs == 0 {
		r.sched.Stop()
		r.sched = nil
	}
}
