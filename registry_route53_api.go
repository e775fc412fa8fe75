package healthroute

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/healthroute/healthroute/arc"
	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/r53api"
	"github.com/healthroute/healthroute/routing"
)

// apiRegistry holds the Route 53-compatible API's listeners (by address, kept
// across reloads) and the blocks that enable it, and rebuilds the blocks when the
// replicated state's API generation moves past the one they were built from.
type apiRegistry struct {
	mu        sync.Mutex
	listeners map[string]*apiListener
	blocks    []*blockConfig // the running blocks with route53_api, in start order
	serving   uint64         // the generation the newest blocks were built from
	tried     uint64         // the last generation a reload was started for
	kick      chan struct{}  // wakes the reloader
	once      sync.Once
	// unacked: a block started since the fleet was last told which generation
	// this member answers from; it is told once the instance serves
	// (instanceStarted), since a block starts before its servers do.
	unacked bool
}

// ackStarted tells the fleet which API generation the serving blocks answer
// from: the oldest any of them was built from. Once an instance serves, the
// previous one's blocks have stopped, so every block listed is the instance's.
func (r *registry) ackStarted() {
	node := r.controlNode() // before api.mu: the node calls replicated, which takes api.mu, under r.mu
	api := &r.api
	api.mu.Lock()
	due := api.unacked && len(api.blocks) > 0
	var gen uint64
	for i, cfg := range api.blocks {
		if i == 0 || cfg.R53API.gen < gen {
			gen = cfg.R53API.gen
		}
	}
	api.unacked = false
	api.mu.Unlock()
	if due && node != nil {
		go ackServing(node, gen)
	}
}

type apiListener struct {
	srv  *r53api.Server
	refs int
}

// controlNode returns the replicated state's node, nil when it is not open.
func (r *registry) controlNode() *control.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.node
}

func (a *apiRegistry) wake() {
	a.mu.Lock()
	k := a.kick
	a.mu.Unlock()
	if k != nil {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

// startRoute53API starts (or shares) the block's API listener and registers its
// zones; once the instance serves, the fleet is told which API generation this
// member answers from (instanceStarted).
func (r *registry) startRoute53API(cfg *blockConfig) error {
	a := cfg.R53API
	if a == nil {
		return nil
	}
	api := &r.api
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.listeners == nil {
		api.listeners = map[string]*apiListener{}
	}
	l := api.listeners[a.Addr]
	if l == nil {
		srv, err := r53api.Start(a.Addr, a.KeyFile, a.Limits, r53api.Backend{Node: r.controlNode, Zones: api.zones, Status: r.checkStatus,
			Services: arc.Services(arc.Backend{Node: r.controlNode, Resources: r.azResources}), Lookups: r.apiLookups()})
		if err != nil {
			return a.at.errorf("route53_api %s: %v", a.Addr, err)
		}
		l = &apiListener{srv: srv}
		api.listeners[a.Addr] = l
		log.Infof("route53_api: serving the Route 53 API on %s", srv.Addr())
	}
	l.refs++
	a.served = a.zones(cfg)
	api.blocks = append(api.blocks, cfg)
	api.serving, api.unacked = a.gen, true
	api.once.Do(func() {
		api.kick = make(chan struct{}, 1)
		go r.reloadForAPI(api.kick)
	})
	return nil
}

// stopRoute53API undoes startRoute53API(cfg).
func (r *registry) stopRoute53API(cfg *blockConfig) {
	a := cfg.R53API
	if a == nil {
		return
	}
	api := &r.api
	api.mu.Lock()
	defer api.mu.Unlock()
	i := slices.Index(api.blocks, cfg)
	if i < 0 {
		return
	}
	api.blocks = slices.Delete(api.blocks, i, i+1)
	if n := len(api.blocks); n > 0 { // a failed reload's block: the running ones' generation again
		api.serving = api.blocks[n-1].R53API.gen
	}
	if l := api.listeners[a.Addr]; l != nil {
		if l.refs--; l.refs == 0 {
			l.srv.Close()
			delete(api.listeners, a.Addr)
		}
	}
}

// zones returns the hosted zones of the running blocks; a zone two blocks serve
// (during a reload, the old and the new) is the newest block's.
func (a *apiRegistry) zones() []r53api.Zone {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	var out []r53api.Zone
	for i := len(a.blocks) - 1; i >= 0; i-- {
		cfg := a.blocks[i]
		for _, z := range cfg.R53API.served {
			if !seen[z.Name] {
				seen[z.Name] = true
				out = append(out, z)
			}
		}
	}
	return out
}

// reloadForAPI reloads the instance whenever the replicated API generation is not
// the one the running blocks were built from: the reload reads the state again
// (loadRoute53API). A reload refused because another runs is tried again; a
// generation whose reload failed is not tried again (the failure is logged, the
// blocks keep answering from the previous one) until the state moves on.
func (r *registry) reloadForAPI(kick chan struct{}) {
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-kick:
		case <-retry.C:
		}
		n := r.controlNode()
		if n == nil {
			continue
		}
		st := n.API()
		if st == nil {
			continue
		}
		api := &r.api
		api.mu.Lock()
		due := len(api.blocks) > 0 && st.Gen != api.serving && st.Gen != api.tried
		api.mu.Unlock()
		if due && reloadInstance() {
			api.mu.Lock()
			api.tried = st.Gen
			api.mu.Unlock()
			log.Infof("route53_api: the API-managed records changed (generation %d): reloading", st.Gen)
		}
	}
}

// ackServing tells the fleet, through the replicated state, that this member
// answers from generation gen: GetChange says INSYNC once every voter has. It
// tries for up to a minute (a leader may be in election), and gives up early when
// the member already said it.
func ackServing(n *control.Node, gen uint64) {
	if gen == 0 {
		return
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if a := n.API(); a != nil && a.Serves[n.Name()] >= gen {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := n.Change(ctx, control.Request{Member: n.Name(), Token: "route53_api", API: &control.APICommand{Serve: gen}})
		cancel()
		if err == nil {
			return
		}
		t := time.NewTimer(500 * time.Millisecond)
		<-t.C
	}
	log.Warningf("route53_api: could not tell the fleet that %s answers from generation %d: changes stay PENDING", n.Name(), gen)
}

// checkStatus returns the observations of check id: each fleet member's latest
// report, or without a fleet this member's verdict.
func (r *registry) checkStatus(id string) []r53api.Observation {
	for _, b := range r.op.Blocks() {
		if !b.HasCheck(id) {
			continue
		}
		for _, c := range b.Checks() {
			if c.Name != id {
				continue
			}
			if c.Fleet != nil {
				var out []r53api.Observation
				for _, m := range c.Fleet.Members {
					host, _, _ := net.SplitHostPort(m.Address)
					out = append(out, r53api.Observation{Checker: m.Member, Healthy: !m.Down, At: m.Observed, Addr: host, Reason: m.Error,
						Detail: fmt.Sprintf("reachable %t, counted %t", m.Reachable, m.Counted)})
				}
				return out
			}
			name := "local"
			if n := r.controlNode(); n != nil {
				name = n.Name()
			}
			return []r53api.Observation{{Checker: name, Healthy: c.Healthy, At: c.LastProbe, Detail: c.LastError, Reason: c.LastError}}
		}
	}
	return nil
}

// azResources returns zonal shift's managed resources: the running blocks'
// azaffinity record sets with az members, by name.
func (r *registry) azResources() []arc.Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	azs := map[string][]string{}
	for cfg := range r.cfgs {
		for _, rs := range cfg.Records {
			if rs.Policy != routing.PolicyAZAffinity {
				continue
			}
			for _, m := range rs.Members {
				if m.AZLevel == routing.AZZone && !slices.Contains(azs[rs.Name], m.AZID) {
					azs[rs.Name] = append(azs[rs.Name], m.AZID)
				}
			}
		}
	}
	var out []arc.Resource
	for _, name := range slices.Sorted(maps.Keys(azs)) {
		slices.Sort(azs[name])
		out = append(out, arc.Resource{Name: name, AZs: azs[name]})
	}
	return out
}
