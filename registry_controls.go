package healthroute

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/operator"
	"github.com/healthroute/healthroute/routing"
)

// acquireControls opens the replicated control state for a block with routing
// controls (the first such block opens it; it then lives across reloads until the
// last one releases it) and refuses a block whose rules the state breaks now. It
// runs before anything else of the block starts, so a refusal leaves nothing to
// undo.
func (r *registry) acquireControls(cfg *blockConfig) error {
	cc := cfg.Controls
	if cc == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	opened := false
	if r.node == nil {
		n, err := control.Open(cc.nodeConfig(cfg), r.replicated)
		if err != nil {
			return cc.at.errorf("controls: %v", err)
		}
		r.node, r.nodeCfg, opened = n, cc.nodeConfig(cfg), true
		log.Infof("controls: member %s, %s", n.Name(), cc)
	} else if nc := cc.nodeConfig(cfg); nc.Dir != r.nodeCfg.Dir || nc.Bind != r.nodeCfg.Bind || !slices.Equal(nc.Voters, r.nodeCfg.Voters) {
		log.Warningf("controls: already running with data_dir %s and bind %q; a changed data_dir, bind or voters takes effect on restart", r.nodeCfg.Dir, r.nodeCfg.Bind)
	}
	st := r.node.State()
	if broken := control.Broken(cc.Rules, st.On); len(broken) > 0 {
		b := broken[0]
		var off []string
		for _, c := range b.Controls {
			off = append(off, c+" "+map[bool]string{true: "on", false: "off"}[st.On(c)])
		}
		if opened {
			r.node.Close()
			r.node = nil
		}
		return cc.rulePos[b.Name].errorf("controls: rule %s (%s) is broken by the state held now (%s): change the state first (with break_glass if another rule is in the way), or change the rule", b.Name, b, strings.Join(off, ", "))
	}
	r.ctlCfgs = append(r.ctlCfgs, cfg)
	r.refreshControlsLocked()
	return nil
}

// releaseControls drops what acquireControls(cfg) took; the last release closes
// the state (its data directory keeps it).
func (r *registry) releaseControls(cfg *blockConfig) {
	if cfg.Controls == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.ctlCfgs, cfg)
	if i < 0 {
		return
	}
	r.ctlCfgs = slices.Delete(r.ctlCfgs, i, i+1)
	if len(r.ctlCfgs) > 0 {
		r.refreshControlsLocked()
		return
	}
	r.op.SetControls(nil)
	r.node.Close()
	r.node = nil
}

// refreshControlsLocked gives the node and the operator the policy of the blocks
// holding the controls: the newest block's rules (a reload's), every block's
// controls and checks. r.mu must be held.
func (r *registry) refreshControlsLocked() {
	if r.node == nil || len(r.ctlCfgs) == 0 {
		return
	}
	latest := r.ctlCfgs[len(r.ctlCfgs)-1]
	p := control.Policy{Rules: latest.Controls.Rules}
	for _, cfg := range append(slices.Collect(maps.Keys(r.cfgs)), r.ctlCfgs...) {
		for name, s := range cfg.Checks {
			p.Checks = append(p.Checks, name)
			if s.Type == health.Control {
				p.Controls = append(p.Controls, name)
			}
		}
	}
	slices.Sort(p.Checks)
	slices.Sort(p.Controls)
	p.Checks, p.Controls = slices.Compact(p.Checks), slices.Compact(p.Controls)
	r.node.SetPolicy(p)
	r.op.SetControls(&operator.ControlSet{Node: r.node, Rules: p.Rules, Controls: p.Controls, Member: r.node.Name()})
}

// replicated is the node's onChange, called on every member after each change its
// raft node applies: the operator's view of the controls, and
// the API's blocks rebuilt when the API's generation changed.
func (r *registry) replicated(st *control.State) {
	setZonalShifts(st)
	r.op.SetReplicated(st)
	if st.API != nil {
		r.api.wake()
	}
}

// setZonalShifts hands the engine the replicated state's zonal shifts that are
// not cancelled.
func setZonalShifts(st *control.State) {
	m := map[routing.ShiftKey]time.Time{}
	for _, z := range st.Shifts {
		if !z.Canceled {
			m[routing.ShiftKey{Name: z.Resource, AZ: z.AwayFrom}] = z.Expiry
		}
	}
	routing.SetZonalShifts(m)
}
