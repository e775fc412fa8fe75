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
	"sync/atomic"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/healthroute/healthroute/control"
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
	// APIAddr returns the address of the API the block declared ("" for none): that
	// API shows the block and its token overrides the block's checks.
	APIAddr() string
	// Generation numbers the health snapshot the block answers from; it changes
	// whenever a check's state does, so views built for one generation stay true
	// until it changes (but for probe counts and times).
	Generation() uint64
}

// Operator holds the running blocks, the overrides and the API listeners of one
// process. The zero value is ready to use.
type Operator struct {
	mu     sync.Mutex
	blocks []Block // in startup order
	// overrides by scope: an API address (what that API's token set, for the blocks
	// that declared it) or "" (every block, set through Override).
	overrides map[string]map[string]bool
	apis      map[string]*apiRef
	version   atomic.Uint64 // counts changes of blocks and overrides, for cached views

	// With routing controls, overrides live in the replicated state: ctl is its
	// node, state the last state applied, replicated what it forces (controls and
	// overrides by check name), applied on top of the others in every block.
	ctl        *ControlSet
	state      *control.State
	replicated map[string]bool
}

type apiRef struct {
	refs int
	srv  *server
}

// Register adds b to the running blocks and gives it the overrides that apply to it.
func (o *Operator) Register(b Block) {
	o.mu.Lock()
	defer o.mu.Unlock() // held while applying, so a concurrent Override cannot be undone
	o.blocks = append(o.blocks, b)
	o.version.Add(1)
	if over := o.effectiveLocked(b); len(over) > 0 {
		b.SetOverrides(over)
	}
}

// Unregister removes b from the running blocks.
func (o *Operator) Unregister(b Block) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.blocks = slices.DeleteFunc(o.blocks, func(x Block) bool { return x == b })
	o.version.Add(1)
}

// Blocks returns the running blocks, oldest first.
func (o *Operator) Blocks() []Block {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.blocks)
}

// inScope reports whether the API of scope (an address; "" for every block) shows
// and controls b.
func inScope(b Block, scope string) bool { return scope == "" || b.APIAddr() == scope }

// blocksOf returns the running blocks the API of scope shows, oldest first.
func (o *Operator) blocksOf(scope string) []Block {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(o.blocks), func(b Block) bool { return !inScope(b, scope) })
}

// effectiveLocked is the overrides that apply to b: the process-wide ones, then
// those of b's API. o.mu must be held.
func (o *Operator) effectiveLocked(b Block) map[string]bool {
	over := maps.Clone(o.overrides[""])
	for _, layer := range []map[string]bool{o.overrides[b.APIAddr()], o.replicated} {
		if len(layer) > 0 {
			if over == nil {
				over = map[string]bool{}
			}
			maps.Copy(over, layer)
		}
	}
	return over
}

// hasCheck reports whether a block the API of scope shows defines check.
func (o *Operator) hasCheck(scope, check string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.ContainsFunc(o.blocks, func(b Block) bool { return inScope(b, scope) && b.HasCheck(check) })
}

// Override forces the status of every check named check: healthy, unhealthy, or
// (nil) back to its probes. It takes effect on the next query of every block that
// has the check, and fails for a check no running block defines.
func (o *Operator) Override(check string, healthy *bool) error {
	return o.override("", check, healthy)
}

// override is Override for the blocks of one API (scope: its address; "" for every
// block): a check those blocks do not define is refused, even when another block has it.
func (o *Operator) override(scope, check string, healthy *bool) error {
	o.mu.Lock()
	if !slices.ContainsFunc(o.blocks, func(b Block) bool { return inScope(b, scope) && b.HasCheck(check) }) {
		o.mu.Unlock()
		if scope != "" {
			return fmt.Errorf("no check named %q in the server blocks of this api", check)
		}
		return fmt.Errorf("no check named %q", check)
	}
	if o.overrides == nil {
		o.overrides = map[string]map[string]bool{}
	}
	if healthy == nil {
		delete(o.overrides[scope], check)
	} else {
		if o.overrides[scope] == nil {
			o.overrides[scope] = map[string]bool{}
		}
		o.overrides[scope][check] = *healthy
	}
	for _, b := range o.blocks { // under o.mu: overrides reach every block in order
		if inScope(b, scope) {
			b.SetOverrides(o.effectiveLocked(b))
		}
	}
	o.version.Add(1)
	o.mu.Unlock()
	via := ""
	if scope != "" {
		via = " (api " + scope + ")"
	}
	if healthy == nil {
		log.Infof("check %s: operator override removed%s", check, via)
	} else {
		log.Infof("check %s: operator override: healthy=%t%s", check, *healthy, via)
	}
	return nil
}

// AcquireAPI starts (or shares) the API listener on addr, which shows and controls
// the blocks whose APIAddr is addr. A second block naming the same address shares
// the first one's listener and takes over its token file ("": overrides refused).
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
// closes its listener and drops the overrides its token set (no block declares
// that API any more).
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
	delete(o.overrides, addr)
	o.version.Add(1)
	o.mu.Unlock()
	a.srv.stop()
}
