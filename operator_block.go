package healthroute

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
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

// The handler is the block the operator surface (package operator) reads and acts on.

// Zones returns the zones the block is authoritative for.
func (h *HealthRoute) Zones() []string { return h.cfg.Zones }

// HasCheck reports whether the block defines a check named name.
func (h *HealthRoute) HasCheck(name string) bool {
	_, ok := h.cfg.Checks[name]
	return ok
}

// Checks returns the block's checks with their state in the current snapshot, their
// probes' latest results and, with a fleet, the fleet's decision.
func (h *HealthRoute) Checks() []view.Check {
	sched, fl := h.reg.scheduler(), h.reg.fleet()
	out := h.resolver.Checks()
	for i := range out {
		v := &out[i]
		spec := h.cfg.Checks[v.Name]
		if !spec.Probed() {
			continue
		}
		if fl != nil {
			v.Fleet = fleetView(fl.View(spec.Fingerprint()))
		}
		if sched != nil {
			if in, found := sched.Info(spec.Fingerprint()); found {
				ownError(v.Fleet, in.LastErr)
				v.LastError, v.LastProbe, v.LastChange = in.LastErr, in.LastProbe, in.LastChange
				v.LastLatency = float64(in.LastLatency.Microseconds()) / 1000
				v.Probes, v.Failures = in.Probes, in.Failures
				v.Phases = phasesView(in.LastPhases)
			}
		}
	}
	return out
}

// Records returns the block's record groups; see Resolver.Records.
func (h *HealthRoute) Records() []view.Record { return h.resolver.Records() }

// Explain resolves q exactly as a DNS query would and says why.
func (h *HealthRoute) Explain(q view.Question) view.Explanation {
	loc := clientLocation{Country: q.Country, Continent: q.Continent, Subdivisions: q.Subdivisions,
		Lat: q.Lat, Lon: q.Lon, HasCoords: q.HasCoords}
	ans, tr := h.resolver.Explain(query{Name: q.Name, Type: q.Type, Client: q.Client, Loc: loc})
	v := view.Explanation{Name: q.Name, Type: dns.TypeToString[q.Type], Client: q.Client.String(),
		Rcode: dns.RcodeToString[ans.Rcode], Answer: []string{}, Scope: ans.Scope, Trace: tr}
	for _, rr := range ans.RRs {
		v.Answer = append(v.Answer, rr.String())
	}
	return v
}

// SetOverrides replaces the operator overrides; see Resolver.SetOverrides.
func (h *HealthRoute) SetOverrides(over map[string]bool) { h.resolver.SetOverrides(over) }

// APIAddr returns the address of the block's api, "" without one.
func (h *HealthRoute) APIAddr() string {
	if h.cfg.API == nil {
		return ""
	}
	return h.cfg.API.Addr
}

// Generation returns the number of the health snapshot the block answers from (0
// before the first); it changes whenever a check's state does.
func (h *HealthRoute) Generation() uint64 {
	if snap := h.resolver.table.Load().snap; snap != nil {
		return snap.Gen
	}
	return 0
}

// ownError puts this instance's current failure reason, in full, on its own row of
// the fleet view (the fleet holds it cut to fleet.MaxReason bytes, and keeps it once
// probes pass).
func ownError(fv *view.Fleet, err string) {
	if fv == nil || err == "" {
		return
	}
	for i := range fv.Members {
		if fv.Members[i].Self {
			fv.Members[i].Error = err
		}
	}
}

// fleetView converts the fleet's view of one check, with the fleet's own quorum
// rule (fleet.Healthy) put in words.
func fleetView(v fleet.View) *view.Fleet {
	fv := &view.Fleet{Healthy: v.Healthy, Total: v.Total, Quorum: v.Quorum, Kept: v.Kept, Members: []view.FleetMember{}, Error: v.Problem}
	if v.Placed {
		fv.Checkers = v.Checkers
	}
	switch {
	case v.New:
		fv.Decision = "no reachable member has a verdict yet: healthy, as a new check"
	case v.Kept:
		fv.Decision = "no reachable member has a fresh report: the last status is kept"
	case fleet.Healthy(v.Healthy, v.Total, v.Quorum):
		fv.Decision = fmt.Sprintf("%d of %d reachable checkers healthy, more than %d%%: healthy", v.Healthy, v.Total, v.Quorum)
	default:
		fv.Decision = fmt.Sprintf("%d of %d reachable checkers healthy, not more than %d%%: unhealthy", v.Healthy, v.Total, v.Quorum)
	}
	for _, r := range v.Reports {
		fv.Members = append(fv.Members, view.FleetMember{Member: r.Member, Self: r.Self, Checker: r.Checker, Region: r.Region, Address: r.Addr, Reachable: r.Reachable,
			Counted: r.Counted, NoVerdict: r.Pending, Down: r.Down, Seq: r.Seq, Observed: r.Observed, Heard: r.Heard, Error: r.Reason})
	}
	return fv
}
