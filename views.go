package healthroute

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/view"
)

// Checks returns the block's checks as the current table judges them (with the
// operator overrides), in no order. Probe details and fleet decisions are the
// handler's to add: the resolver knows only snapshots.
func (r *resolver) Checks() []view.Check {
	t := r.table.Load()
	out := make([]view.Check, 0, len(r.cfg.Checks))
	for name, spec := range r.cfg.Checks {
		v := view.Check{Name: name, Type: spec.Type.String(), Target: spec.Target, Healthy: t.healthy(spec),
			Invert: spec.Invert, Disabled: spec.Disabled, Seen: t.snap.Seen(spec)}
		if o, ok := t.over[name]; ok && spec.Type != health.Control { // a control's state is its switch, not an override
			v.Override = &o
		}
		for _, c := range spec.Children {
			v.Children = append(v.Children, c.Name)
		}
		if spec.Type == health.Calculated {
			v.Threshold = spec.Threshold
		} else {
			v.Interval = spec.Interval.String()
		}
		if spec.Probed() {
			ok := !t.snap.Status(spec.Fingerprint()).Down
			v.Probed = &ok
		}
		out = append(out, v)
	}
	return out
}

// Ready reports whether every check has a first result in the current snapshot
// (disabled checks need none, calculated ones need their children's).
func (r *resolver) Ready() bool {
	snap := r.table.Load().snap
	for _, s := range r.cfg.Checks {
		if !snap.Seen(s) {
			return false
		}
	}
	return true
}

// Records returns every record group as reached from its own name, with its
// members' health in the current table, in Corefile order.
func (r *resolver) Records() []view.Record {
	var out []view.Record
	t := r.table.Load()
	for _, rs := range r.cfg.Records {
		e := t.plan.names[rs.Name]
		if e == nil {
			e = t.plan.wild[strings.TrimPrefix(rs.Name, "*.")]
		}
		for _, n := range e.nodes() {
			if n.set.recordSet != rs {
				continue // another block at the name
			}
			st := t.state(n.id)
			v := view.Record{Name: rs.Name, Type: dns.TypeToString[n.qtype], Policy: rs.Policy.String(), API: rs.API}
			if !n.dynHealth {
				hv := st.healthy
				v.Healthy, v.LastResort = &hv, st.failOpen
			}
			for i := range n.members {
				mn := &n.members[i]
				mv := view.Member{ID: mn.m.ID, Key: policyKey(mn.m, rs.Policy), Target: target(mn), Healthy: st.ok[i], ETH: mn.m.ETH}
				if mn.child != nil {
					mv.Alias = mn.m.Target
				}
				if mn.m.Check != nil {
					mv.Check = mn.m.Check.Name
				}
				v.Members = append(v.Members, mv)
			}
			out = append(out, v)
		}
	}
	return out
}
