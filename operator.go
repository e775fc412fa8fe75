package healthroute

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// operator is the part of the process-wide registry that operators act on through
// the HTTP API: the running blocks, the overrides (which survive reloads: they live
// here, not in a block) and the API listeners, shared by address and
// reference-counted so a reload that keeps an address keeps its socket.
type operator struct {
	mu        sync.Mutex
	instances []*HealthRoute // in startup order
	overrides map[string]bool
	apis      map[string]*apiRef
}

type apiRef struct {
	refs int
	srv  *apiServer
}

// register adds h to the running blocks and gives it the current overrides.
func (o *operator) register(h *HealthRoute) {
	o.mu.Lock()
	defer o.mu.Unlock() // held while applying, so a concurrent Override cannot be undone
	o.instances = append(o.instances, h)
	if len(o.overrides) > 0 {
		h.resolver.SetOverrides(maps.Clone(o.overrides))
	}
}

// unregister removes h, and the check_healthy series of its checks that no running
// block defines any more (a reload that dropped them).
func (o *operator) unregister(h *HealthRoute) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.instances = slices.DeleteFunc(o.instances, func(x *HealthRoute) bool { return x == h })
	for name := range h.cfg.Checks {
		kept := false
		for _, x := range o.instances {
			_, ok := x.cfg.Checks[name]
			kept = kept || ok
		}
		if !kept {
			checkHealthy.DeleteLabelValues(name)
		}
	}
}

// Instances returns the running blocks, oldest first.
func (o *operator) Instances() []*HealthRoute {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.instances)
}

// Override forces the status of every check named check: healthy, unhealthy, or
// (nil) back to its probes. It takes effect on the next query of every block that
// has the check, and fails for a check no running block defines.
func (o *operator) Override(check string, healthy *bool) error {
	o.mu.Lock()
	known := false
	for _, h := range o.instances {
		_, ok := h.cfg.Checks[check]
		known = known || ok
	}
	if !known {
		o.mu.Unlock()
		return fmt.Errorf("no check named %q", check)
	}
	if o.overrides == nil {
		o.overrides = map[string]bool{}
	}
	if healthy == nil {
		delete(o.overrides, check)
	} else {
		o.overrides[check] = *healthy
	}
	over := maps.Clone(o.overrides)
	for _, h := range o.instances { // under o.mu: overrides reach every block in order
		h.resolver.SetOverrides(over)
	}
	o.mu.Unlock()
	if healthy == nil {
		log.Infof("check %s: operator override removed", check)
	} else {
		log.Infof("check %s: operator override: healthy=%t", check, *healthy)
	}
	return nil
}

// Overrides returns the operator overrides by check name.
func (o *operator) Overrides() map[string]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.overrides)
}

// acquireAPI starts (or shares) the listener for cfg. A second block naming the same
// address shares the first one's listener and token.
func (o *operator) acquireAPI(cfg *APIConfig, reg *registry) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.apis == nil {
		o.apis = map[string]*apiRef{}
	}
	if a, ok := o.apis[cfg.Addr]; ok {
		a.refs++
		a.srv.setTokenFile(cfg.TokenFile) // a reload may have changed it
		return nil
	}
	srv, err := startAPI(cfg, reg)
	if err != nil {
		return err
	}
	o.apis[cfg.Addr] = &apiRef{refs: 1, srv: srv}
	return nil
}

func (o *operator) releaseAPI(cfg *APIConfig) {
	o.mu.Lock()
	a, ok := o.apis[cfg.Addr]
	if !ok {
		o.mu.Unlock()
		return
	}
	a.refs--
	if a.refs > 0 {
		o.mu.Unlock()
		return
	}
	delete(o.apis, cfg.Addr)
	o.mu.Unlock()
	a.srv.stop()
}
