package routing

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/view"
)

// Checks returns the block's checks as the current table judges them (with the
// operator overrides), in no order. Probe details and fleet decisions are the
// handler's to add: the Resolver knows only snapshots.
func (r *Resolver) Checks() []view.Check {
	t := r.Table.Load()
	out := make([]view.Check, 0, len(r.cfg.Checks))
	for name, spec := range r.cfg.Checks {
		v := view.Check{Name: name, Type: spec.Type.String(), Target: spec.Target, Healthy: t.Healthy(spec),
			Invert: spec.Invert, Disabled: spec.Disabled, Seen: t.Snap.Seen(spec)}
		if o, ok := t.Over[name]; ok && spec.Type != health.Control { // a control's state is its switch, not an override
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
			ok := !t.Snap.Status(spec.Fingerprint()).Down
			v.Probed = &ok
		}
		out = append(out, v)
	}
	return out
}

// Ready reports whether every check has a first result in the current snapshot
// (disabled checks need none, calculated ones need their children's).
func (r *Resolver) Ready() bool {
	snap := r.Table.Load().Snap
	for _, s := range r.cfg.Checks {
		if !snap.Seen(s) {
			return false
		}
	}
	return true
}

// Records returns every record group as reached from its own name, with its
// members' health in the current table, in Corefile order.
func (r *Resolver) Records() []view.Record {
	var out []view.Record
	t := r.Table.Load()
	for _, rs := range r.cfg.Records {
		e := t.Plan.Names[rs.Name]
		if e == nil {
			e = t.Plan.wild[strings.TrimPrefix(rs.Name, "*.")]
		}
		for _, n := range e.nodes() {
			if n.Set.RecordSet != rs {
				continue // another block at the name
			}
			st := t.State(n.ID)
			v := view.Record{Name: rs.Name, Type: dns.TypeToString[n.QType], Policy: rs.Policy.String(), API: rs.API}
			if !n.DynHealth {
				hv := st.healthy
				v.Healthy, v.LastResort = &hv, st.FailOpen
			}
			for i := range n.Members {
				mn := &n.Members[i]
				mv := view.Member{ID: mn.Member.ID, Key: policyKey(mn.Member, rs.Policy), Target: target(mn), Healthy: st.OK[i], ETH: mn.Member.ETH}
				if mn.Child != nil {
					mv.Alias = mn.Member.Target
				}
				if mn.Member.Check != nil {
					mv.Check = mn.Member.Check.Name
				}
				v.Members = append(v.Members, mv)
			}
			out = append(out, v)
		}
	}
	return out
}
