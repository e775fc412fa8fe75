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

// started notes h, started by OnStartup, as running, and as the new instance's
// while a reload runs. A new instance's handler is set to take over the queries
// of the running handlers it covers (the same server and zones) at its first
// answer: see relay.
func (r *registry) started(h *HealthRoute) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reloading {
		var olds []*HealthRoute
		for _, o := range r.live {
			if !slices.Contains(r.pending, o) && h.covers(o) {
				olds = append(olds, o)
			}
		}
		if len(olds) > 0 {
			h.preds = olds
			h.relay.Store(&relay{from: olds, handoff: &relay{to: h}})
		}
		r.pending = append(r.pending, h)
	}
	r.live = append(r.live, h)
}

// stopped drops h, shut down, from the running handlers.
func (r *registry) stopped(h *HealthRoute) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.live, h); i >= 0 {
		r.live = slices.Delete(r.live, i, i+1)
	}
}

// commitReload is the old instance's OnShutdown: the new instance has taken over,
// its blocks are no longer pending. A reload refused meanwhile runs now.
//
// caddy stops the old instance's servers before its OnShutdown, so nothing old is
// left to take queries from: a new handler that has not answered yet lets go of
// the old ones (its relay), which a handler that answered already did.
func (r *registry) commitReload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.pending {
		if rl := h.relay.Load(); rl != nil && rl.handoff != nil {
			h.relay.CompareAndSwap(rl, nil)
		}
		h.preds = nil
	}
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
	for _, h := range pending {
		h.handBack()
	}
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

// relay is how a block's queries are handed from one generation to the next
// during a reload. caddy starts the new instance's servers on the old one's
// sockets before it stops the old ones, and meanwhile each query lands on either
// instance: without a relay, a client asking the same name one query after
// another could get the new generation's answer and then the old one's again.
//
// A new instance's handler that covers running handlers (registry.started) holds
// a relay with from (those handlers) and handoff (a relay to itself). At its first
// query, which means the new instance serves (caddy starts its servers last,
// once every block has started), it stores handoff in each of from before
// it answers; from then on the old handlers give every query to it, so once any
// query got the new generation's answer, every later one does too. The old
// handler's plugin chain in front of healthroute stays the old instance's; from
// healthroute on (the plugins after it included) the query is the new instance's.
//
// A reload that fails (abortReload: a block or server that did not start, or,
// rarely, an old server that did not stop in time) hands the old handlers their
// queries back (handBack): the old instance goes on answering itself. The query path reads
// h.relay with one atomic load and allocates nothing: both relays are built when
// the new handler starts.
type relay struct {
	to      *HealthRoute   // the newer handler that answers this one's queries
	from    []*HealthRoute // the handlers this one takes over at its first query
	handoff *relay         // relay{to: this handler}, stored in each of from
}

// answerer returns the handler that answers h's queries, given h's relay rl: the
// newest handler rl leads to or, when rl is a takeover not yet done, h itself,
// once it has taken over the handlers it supersedes.
//
//go:noinline
func (h *HealthRoute) answerer(rl *relay) *HealthRoute {
	if rl.handoff != nil {
		for _, old := range rl.from {
			old.relay.Store(rl.handoff)
		}
		h.relay.CompareAndSwap(rl, nil)
		return h
	}
	for rl != nil && rl.to != nil { // each to was started later than the handler holding it: no cycle
		h = rl.to
		rl = h.relay.Load()
	}
	return h
}

// covers reports whether h, a reload's new handler, answers whatever o, a running
// handler, answers: it listens on one of o's servers and serves each of o's zones.
func (h *HealthRoute) covers(o *HealthRoute) bool {
	sameServer := len(h.servers) == 0 && len(o.servers) == 0 ||
		slices.ContainsFunc(o.servers, func(s string) bool { return slices.Contains(h.servers, s) })
	return sameServer && !slices.ContainsFunc(o.cfg.Zones, func(z string) bool { return !slices.Contains(h.cfg.Zones, z) })
}

// handBack undoes h's takeover, for a reload that failed: the handlers h took over
// answer their queries themselves again. The registry's mu must be held.
func (h *HealthRoute) handBack() {
	h.relay.Store(nil)
	for _, old := range h.preds {
		if rl := old.relay.Load(); rl != nil && rl.to == h {
			old.relay.CompareAndSwap(rl, nil)
		}
	}
	h.preds = nil
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
