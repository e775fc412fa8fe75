package healthroute

import (
	"fmt"
	"runtime/debug"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
)

const pluginName = "healthroute"

var log = clog.NewWithPlugin(pluginName)

func init() {
	plugin.Register(pluginName, setup)
	caddy.RegisterEventHook("healthroute-route53-api", instanceStarted)
}

// instanceStarted runs once an instance serves (at startup, and after a reload
// has stopped the previous instance): this member now answers from the newest
// block's Route 53 API generation, and tells the fleet so (registry.ackStarted).
func instanceStarted(ev caddy.EventName, _ any) error {
	if ev != caddy.InstanceStartupEvent {
		return nil
	}
	shared.ackStarted()
	return nil
}

func setup(c *caddy.Controller) error {
	cfg, err := parse(c, shared.controlNode())
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	h := newHealthRoute(cfg)
	h.servers = serverAddrs(dnsserver.GetConfig(c))
	c.OnStartup(h.OnStartup)   // acquire shared state, start probing; never in parse
	c.OnShutdown(h.OnShutdown) // on reload this runs after the new instance started
	if c.Get(reloadHooks{}) == nil {
		// Once per instance, however many blocks it has: beginReload refuses a
		// second reload, and a second call from the same one would be taken for it.
		c.Set(reloadHooks{}, true)
		c.OnRestart(h.reg.beginReload)
		c.OnRestartFailed(h.reg.abortReload) // caddy does not shut down a failed reload's blocks
	}
	dnsserver.GetConfig(c).AddPlugin(func(n plugin.Handler) plugin.Handler { h.Next = n; return h })
	return nil
}

// reloadHooks is the instance storage key that says the reload hooks are registered.
type reloadHooks struct{}

// OnStartup acquires the process-wide scheduler, starts this block's checks and
// subscribes the block's routing.Resolver to health snapshots.
func (h *HealthRoute) OnStartup() error {
	if err := h.reg.acquireControls(h.cfg); err != nil {
		return plugin.Error(pluginName, err)
	}
	if err := h.reg.startRoute53API(h.cfg); err != nil {
		h.reg.releaseControls(h.cfg)
		return plugin.Error(pluginName, err)
	}
	sched := h.reg.acquire(h.cfg)
	h.sched = sched
	initCheckSeries(h.cfg)
	specs := h.specs()
	states, histories := h.cfg.dataDirs()
	if states != "" {
		h.reg.useDataDir(states) // before Acquire: the checks start from what was saved
	}
	sched.Acquire(specs)
	// Health reaches the answers here: each snapshot the scheduler publishes
	// compiles a new routing table (routing.Resolver.Publish).
	h.stop = sched.Subscribe(h.resolver.Publish)
	h.reg.op.Register(h)
	if a := h.cfg.API; a != nil {
		if err := h.reg.op.AcquireAPI(a.Addr, a.TokenFile); err != nil {
			// Undo the above, so a reload that fails here leaves nothing running
			// for the old instance to share.
			h.stop()
			h.stop = nil
			h.reg.op.Unregister(h)
			h.dropCheckSeries()
			sched.Release(specs)
			h.reg.release(h.cfg)
			h.reg.stopRoute53API(h.cfg)
			h.reg.releaseControls(h.cfg)
			return plugin.Error(pluginName, fmt.Errorf("%s:%d - api %s: %w", a.at.file, a.at.line, a.Addr, err))
		}
	}
	if w := h.cfg.Webhook; w != nil {
		h.notifier.Store(h.reg.acquireNotifier(w))
	}
	if histories != "" {
		h.reg.useHistoryDir(histories)
	}
	h.startWatchers()
	h.adoptCounters()
	for _, s := range h.servers { // the last-resort series exist from the start
		h.counters(s)
	}
	h.reg.started(h)
	if shared.parsed.Swap(false) {
		debug.FreeOSMemory()
	}
	return nil
}

// OnShutdown releases what OnStartup acquired; on reload it runs after the new
// instance's OnStartup, so unchanged checks keep running.
func (h *HealthRoute) OnShutdown() error {
	h.reg.commitReload()
	h.reg.stopped(h)
	shared.counting.shutdown(h.cfg)
	if h.stop == nil {
		return nil
	}
	h.stop()
	h.stop = nil
	if h.cfg.API != nil {
		h.reg.op.ReleaseAPI(h.cfg.API.Addr)
	}
	h.reg.op.Unregister(h)
	h.dropCheckSeries()
	shared.failing.drop(h.resolver)
	if w := h.cfg.Webhook; w != nil && h.notifier.Swap(nil) != nil {
		h.reg.releaseNotifier(w)
	}
	if h.unwatch != nil {
		h.unwatch()
		h.unwatch = nil
	}
	h.reg.noteCheckStates()
	h.reg.scheduler().Release(h.specs())
	h.reg.release(h.cfg)
	h.reg.stopRoute53API(h.cfg)
	h.reg.releaseControls(h.cfg)
	return nil
}
