package healthroute

import (
	"context"
	"errors"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/routing"
)

// Reloads and the file watchers that start them: a registry runs one reload at a
// time, and the route53 and latency_table files are watched while a block runs.

// latencyTablePeriod is how often the latency_table and route53 files are checked for
// changes.
const latencyTablePeriod = 2 * time.Second

func init() { shared.follow = reloadFromDisk } // set here: reloadFromDisk refers to shared

// errReloadRunning refuses a reload asked for while another runs.
var errReloadRunning = errors.New("healthroute: a reload is running; this one runs after it, from the Corefile on disk")

// beginReload is the running instance's OnRestart: blocks started from now on
// belong to the new instance until it has taken over. While a reload runs it refuses
// the new one (caddy then calls abortReload for it, which must not touch the running
// one) and notes that a reload must follow.
func (r *registry) beginReload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reloading {
		r.refused++
		r.again = true
		return errReloadRunning
	}
	r.reloading, r.pending = true, nil
	return nil
}

// isReloading reports whether a reload runs: between the running instance's
// OnRestart and its OnShutdown or OnRestartFailed.
func (r *registry) isReloading() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloading
}

// started notes h, started by OnStartup, as the new instance's while a reload runs.
func (r *registry) started(h *HealthRoute) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reloading {
		r.pending = append(r.pending, h)
	}
}

// commitReload is the old instance's OnShutdown: the new instance has taken over,
// its blocks are no longer pending. A reload refused meanwhile runs now.
func (r *registry) commitReload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloading, r.pending = false, nil
	r.followLocked()
}

// abortReload is the running instance's OnRestartFailed: it shuts down the blocks
// the failed reload started, which caddy discards without their OnShutdown, so
// that they neither keep probing nor show on the API. A reload that beginReload
// refused also ends here: it built nothing, and the running reload goes on.
func (r *registry) abortReload() error {
	r.mu.Lock()
	if r.refused > 0 {
		r.refused--
		r.mu.Unlock()
		return nil
	}
	pending, failed := r.pending, r.reloading
	r.reloading, r.pending = false, nil
	r.followLocked()
	r.mu.Unlock()
	if failed { // false when no reload ran (a later plugin failed after the commit)
		reloadsFailed.Inc()
	}
	for _, h := range pending {
		h.OnShutdown()
	}
	return nil
}

// followLocked starts the reload that a refusal asked for, once the running one has
// ended. r.mu must be held.
func (r *registry) followLocked() {
	if !r.again || r.follow == nil {
		r.again = false
		return
	}
	r.again = false
	go r.follow()
}

// watchLatencyTable reloads the table at path into r whenever the file changes or
// is replaced (see internal/watch), checking every period, until ctx ends. The
// first check reloads: the file may have changed since setup read it. A file that
// fails to load is logged and the last good table keeps serving.
func watchLatencyTable(ctx context.Context, r *routing.Resolver, path string, limit int64, period time.Duration) {
	watch.Poll(ctx, period, []string{path}, nil, func() bool {
		t, err := r.LoadLatency(path, limit)
		if err != nil {
			log.Errorf("latency_table: keeping the previous table: %v", limitHint(err))
			return true // tried again once the file changes again
		}
		log.Debugf("latency_table: loaded %s (%d prefixes)", path, t.Rows.Len())
		return true
	})
}

// watchRoute53 polls the route53 property's files every period until ctx ends, and
// reloads the server when one changed or was replaced since parse read them (see
// internal/watch). The reload parses the whole Corefile again: a zone that fails to
// load is logged and the previous configuration keeps serving, as on any reload
// that fails.
func watchRoute53(ctx context.Context, r *route53Config, period time.Duration, reload func() bool) {
	paths := r.files.Paths()
	watch.Poll(ctx, period, paths, slices.Clone(r.stats), func() bool {
		if !reload() {
			return false
		}
		log.Infof("route53: %s changed: reloading", strings.Join(paths, ", "))
		return true
	})
}

// reloadInstance restarts the running instance with its own Corefile, which reads
// the route53 files again, and reports whether it started one. It refuses (false,
// so that the watcher offers the change again at its next check) while another
// reload runs, whatever started it (a watcher, SIGUSR1, the reload plugin): reloads
// are one at a time, and a change that arrives during one is applied after it. It
// returns at once: the restart shuts this handler down.
//
// The instance restarted is the one running now, looked up at each reload: a
// watcher outlives no instance, but the instance that started it may already have
// been replaced by a reload it did not start.
func reloadInstance() bool {
	return reloadThrough(shared, currentInstance, (*caddy.Instance).Caddyfile)
}

// reloadThrough is reloadInstance with its registry, instance lookup and Corefile.
func reloadThrough(reg *registry, current func() *caddy.Instance, corefile func(*caddy.Instance) caddy.Input) bool {
	if reg.isReloading() || !shared.restarting.CompareAndSwap(false, true) {
		return false
	}
	i := current()
	if i == nil {
		shared.restarting.Store(false)
		return false
	}
	go func() {
		defer shared.restarting.Store(false)
		if _, err := i.Restart(corefile(i)); errors.Is(err, errReloadRunning) {
			log.Infof("route53: a reload is running; the change is applied after it")
		} else if err != nil {
			log.Errorf("route53: keeping the previous configuration: %v", err)
			debug.FreeOSMemory() // what the failed reload built is garbage: return it now
		}
	}()
	return true
}

// reloadFromDisk restarts the running instance with its Corefile read anew, as
// SIGUSR1 does: the reload that one refused while another ran asked for. It waits
// (up to a minute) for the running reload to end.
func reloadFromDisk() {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(time.Minute)
	fromDisk := func(i *caddy.Instance) caddy.Input {
		in, err := caddy.LoadCaddyfile(i.Caddyfile().ServerType())
		if err != nil || in == nil {
			log.Errorf("reload: reading the Corefile again: %v: reloading the running one", err)
			return i.Caddyfile()
		}
		return in
	}
	for !reloadThrough(shared, currentInstance, fromDisk) {
		if time.Now().After(deadline) {
			log.Errorf("reload: a reload refused while another ran could not run within a minute; send SIGUSR1 to apply the Corefile")
			return
		}
		<-tick.C
	}
	log.Infof("reload: running the reload refused while another ran")
}

// currentInstance returns the running instance: caddy lists the instances that
// serve, and outside a reload (when this is asked) there is one.
func currentInstance() *caddy.Instance {
	insts := caddy.Instances()
	if len(insts) == 0 {
		return nil
	}
	return insts[len(insts)-1]
}

// startWatchers watches the block's latency_table and route53 files while it runs:
// a changed latency table is loaded in place, changed route53 files reload the
// instance. h.unwatch stops them.
func (h *HealthRoute) startWatchers() {
	if path := h.cfg.LatencyTable; path != "" {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			watchLatencyTable(ctx, h.resolver, path, h.cfg.fileLimit(), latencyTablePeriod)
		}()
		h.unwatch = func() { cancel(); <-done }
	}
	if r := h.cfg.Route53; r != nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); watchRoute53(ctx, r, latencyTablePeriod, reloadInstance) }()
		unwatch := h.unwatch
		h.unwatch = func() {
			cancel()
			<-done
			if unwatch != nil {
				unwatch()
			}
		}
	}
}
