// Package operator is healthroute's operator surface: the HTTP API (JSON views,
// explain, overrides), the status page, the overrides themselves (which outlive
// reloads) and the API listeners, shared by address across server blocks.
//
// It reads the routing engine only through Block, whose methods return the plain
// data of package view; it never sees the engine's tables.
package operator

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/healthroute/healthroute/view"
)

var log = clog.NewWithPlugin("healthroute")

// Block is one running server block, as the operator surface reads and acts on it.
// The plugin's handler implements it.
type Block interface {
	// Zones returns the zones the block is authoritative for.
	Zones() []string
	// HasCheck reports whether the block defines a check named name.
	HasCheck(name string) bool
	// Checks returns the block's checks with their state in the current snapshot,
	// their probes' latest results and, with a fleet, its decision; in no order.
	Checks() []view.Check
	// Records returns the block's record groups as reached from their own names,
	// with their members' health in the current snapshot, in Corefile order.
	Records() []view.Record
	// Explain resolves q exactly as a DNS query would and says why.
	Explain(q view.Question) view.Explanation
	// SetOverrides replaces the operator overrides (check name -> forced status).
	SetOverrides(over map[string]bool)
}

// Operator holds the running blocks, the overrides and the API listeners of one
// process. The zero value is ready to use.
type Operator struct {
	mu        sync.Mutex
	blocks    []Block // in startup order
	overrides map[string]bool
	apis      map[string]*apiRef
}

type apiRef struct {
	refs int
	srv  *server
}

// Register adds b to the running blocks and gives it the current overrides.
func (o *Operator) Register(b Block) {
	o.mu.Lock()
	defer o.mu.Unlock() // held while applying, so a concurrent Override cannot be undone
	o.blocks = append(o.blocks, b)
	if len(o.overrides) > 0 {
		b.SetOverrides(maps.Clone(o.overrides))
	}
}

// Unregister removes b from the running blocks.
func (o *Operator) Unregister(b Block) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.blocks = slices.DeleteFunc(o.blocks, func(x Block) bool { return x == b })
}

// Blocks returns the running blocks, oldest first.
func (o *Operator) Blocks() []Block {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.blocks)
}

// Override forces the status of every check named check: healthy, unhealthy, or
// (nil) back to its probes. It takes effect on the next query of every block that
// has the check, and fails for a check no running block defines.
func (o *Operator) Override(check string, healthy *bool) error {
	o.mu.Lock()
	if !slices.ContainsFunc(o.blocks, func(b Block) bool { return b.HasCheck(check) }) {
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
	for _, b := range o.blocks { // under o.mu: overrides reach every block in order
		b.SetOverrides(over)
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
func (o *Operator) Overrides() map[string]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.overrides)
}

// AcquireAPI starts (or shares) the API listener on addr. A second block naming the
// same address shares the first one's listener and takes over its token file ("":
// overrides refused).
func (o *Operator) AcquireAPI(addr, tokenFile string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.apis == nil {
		o.apis = map[string]*apiRef{}
	}
	if a, ok := o.apis[addr]; ok {
		a.refs++
		a.srv.setTokenFile(tokenFile) // a reload may have changed it
		return nil
	}
	srv, err := listen(addr, tokenFile, o)
	if err != nil {
		return err
	}
	o.apis[addr] = &apiRef{refs: 1, srv: srv}
	return nil
}

// ReleaseAPI releases what AcquireAPI acquired; the last release of an address
// closes its listener.
func (o *Operator) ReleaseAPI(addr string) {
	o.mu.Lock()
	a, ok := o.apis[addr]
	if !ok {
		o.mu.Unlock()
		return
	}
	a.refs--
	if a.refs > 0 {
		o.mu.Unlock()
		return
	}
	delete(o.apis, addr)
	o.mu.Unlock()
	a.srv.stop()
}
