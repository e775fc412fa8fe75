package healthroute

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/view"
)

// historySaveEvery is how often the histories are saved to the history directory
// when they changed (and once more when the last block shuts down).
const historySaveEvery = 5 * time.Minute

// historyKeeper records status changes from the scheduler's snapshots and saves
// the histories to the api's history_dir, while a block runs.
type historyKeeper struct {
	mu     sync.Mutex
	prev   *health.Snapshot
	sched  *health.Scheduler
	fl     atomic.Pointer[fleet.Fleet] // the running fleet member, nil without one
	dir    string
	cancel func()
	done   chan struct{}
}

// membersAgreeing names the members whose counted reports of fp say down.
func membersAgreeing(fl *fleet.Fleet, fp string, down bool) []string {
	var out []string
	for _, r := range fl.View(fp).Reports {
		if r.Counted && r.Down == down {
			out = append(out, r.Member)
		}
	}
	return out
}

// observe is the scheduler subscription: it records each check whose published
// status changed (a new check that starts unhealthy counts: new checks are healthy).
func (k *historyKeeper) observe(snap *health.Snapshot) {
	k.mu.Lock()
	prev := k.prev
	k.prev = snap
	k.mu.Unlock()
	if snap == nil {
		return
	}
	now := time.Now()
	snap.Diff(prev, func(fp string) {
		st, was := snap.Status(fp), prev.Status(fp)
		if !st.Seen || st.Down == was.Down {
			return
		}
		in, ok := k.sched.Info(fp)
		if !ok {
			return
		}
		reason := in.LastErr
		if !st.Down {
			reason = "probes pass"
		} else if in.LastProbe.IsZero() {
			reason = "the state saved before the restart (data_dir)"
		} else if reason == "" {
			reason = "the fleet's quorum says unhealthy" // this instance's own probes pass
		}
		var members []string
		if fl := k.fl.Load(); fl != nil {
			members = membersAgreeing(fl, fp, st.Down)
		}
		shared.histories.Change(fp, in.Spec.Name, now, st.Down, reason, members)
	})
}

// start runs the keeper's upkeep until close: every historySaveEvery it drops the
// histories of checks no block holds any more and, with a history_dir, saves them
// when they changed.
func (k *historyKeeper) start() {
	stop := make(chan struct{})
	k.done = make(chan struct{})
	k.cancel = func() { close(stop) }
	go func() {
		defer close(k.done)
		t := time.NewTicker(historySaveEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			shared.histories.Retain(func(fp string) bool { _, ok := k.sched.Info(fp); return ok })
			k.save(false)
		}
	}()
}

// useDir loads the histories saved in dir and saves them there from now on; the
// first block with a history_dir sets it for the process.
func (k *historyKeeper) useDir(dir string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dir != "" {
		if k.dir != dir {
			log.Warningf("api: history_dir %s: the histories are already kept in %s; a changed history_dir takes effect on restart", dir, k.dir)
		}
		return
	}
	k.dir = dir
	if err := shared.histories.Load(dir); err != nil {
		log.Errorf("api: history_dir: %v: starting with empty histories", err)
	}
}

// save writes the histories to the history_dir, if there is one, when they changed
// (always, with force).
func (k *historyKeeper) save(force bool) {
	k.mu.Lock()
	dir := k.dir
	k.mu.Unlock()
	if dir == "" || !(force || shared.histories.Dirty()) {
		return
	}
	if err := shared.histories.Save(dir); err != nil {
		log.Errorf("api: history_dir: saving the histories: %v", err)
	}
}

// close stops the upkeep and saves once more: the last block is shutting down.
func (k *historyKeeper) close() {
	k.cancel()
	<-k.done
	k.save(true)
}

// History returns the history of the block's check name: its status changes and
// its minutes of probes. A calculated or disabled check has none of its own (its
// children do); ok is false when the block has no such check.
func (h *HealthRoute) History(name string) (v view.History, ok bool) {
	spec, ok := h.cfg.Checks[name]
	if !ok {
		return view.History{}, false
	}
	if !spec.Probed() {
		return view.History{Check: name, Changes: []view.Change{}, Minutes: []view.Minute{}}, true
	}
	v, _ = shared.histories.Get(spec.Fingerprint(), name)
	return v, true
}

// phasesView converts a probe's phases for the API.
func phasesView(p health.Phases) *view.Phases {
	if p.Total == 0 {
		return nil
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return &view.Phases{ConnectMs: ms(p.Connect), TLSMs: ms(p.TLS), FirstByteMs: ms(p.FirstByte), TotalMs: ms(p.Total)}
}

// Timeline summarises the span before now of the block's check name in n slots;
// ok is false when the check has no history (calculated, disabled, or not probed yet).
func (h *HealthRoute) Timeline(name string, now time.Time, span time.Duration, n int) (view.Timeline, bool) {
	spec, ok := h.cfg.Checks[name]
	if !ok || !spec.Probed() {
		return view.Timeline{}, false
	}
	return shared.histories.Timeline(spec.Fingerprint(), now, span, n)
}

// RecentChanges returns the n latest status changes of the block's checks, newest
// first.
func (h *HealthRoute) RecentChanges(n int) []view.CheckChange {
	names := make(map[string]string, len(h.cfg.Checks))
	for name, s := range h.cfg.Checks {
		if s.Probed() {
			names[s.Fingerprint()] = name
		}
	}
	return shared.histories.Latest(n, func(fp string) (string, bool) { nm, ok := names[fp]; return nm, ok })
}

// FailOpenHistory returns the times the block's record groups failed open that were
// not over before from, latest first.
func (h *HealthRoute) FailOpenHistory(from time.Time) []view.OpenSpan {
	names := make(map[string]bool, len(h.cfg.Records))
	for _, rs := range h.cfg.Records {
		names[rs.Name] = true
	}
	return shared.failing.since(from, names)
}
