package healthroute

import (
	"fmt"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/routing"
	"github.com/healthroute/healthroute/view"
)

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

// Records returns the block's record groups; see routing.Resolver.Records.
func (h *HealthRoute) Records() []view.Record { return h.resolver.Records() }

// Explain resolves q exactly as a DNS query would and says why.
func (h *HealthRoute) Explain(q view.Question) view.Explanation {
	loc := routing.ClientLocation{Country: q.Country, Continent: q.Continent, Subdivisions: q.Subdivisions,
		Lat: q.Lat, Lon: q.Lon, HasCoords: q.HasCoords}
	ans, tr := h.resolver.Explain(routing.Query{Name: q.Name, Type: q.Type, Client: q.Client, Loc: loc})
	v := view.Explanation{Name: q.Name, Type: dns.TypeToString[q.Type], Client: q.Client.String(),
		Rcode: dns.RcodeToString[ans.Rcode], Answer: []string{}, Scope: ans.Scope, Trace: tr}
	for _, rr := range ans.RRs {
		v.Answer = append(v.Answer, rr.String())
	}
	return v
}

// SetOverrides replaces the operator overrides; see routing.Resolver.SetOverrides.
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
	if snap := h.resolver.Table.Load().Snap; snap != nil {
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
