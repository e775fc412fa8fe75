package healthroute

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/view"
)

// Explain resolves q exactly as a DNS query would and returns the answer with the
// decisions that led to it.
func (r *resolver) Explain(q query) (answer, *view.Trace) {
	tr := &view.Trace{}
	q.trace = tr
	var ans answer
	r.resolve(&q, &ans)
	tr.NextPlugin = ans.Pass && r.plan.fall.Through(q.Name)
	return ans, tr
}

// explain records the decision at node n; chosen is the member picked (-1: a
// multivalue set, or no record for this client).
func (r *resolver) explain(t *table, n *node, q *query, chosen int32) {
	st := t.state(n.id)
	step := view.Step{
		Record: n.set.Name, Type: dns.TypeToString[n.qtype], Policy: n.set.Policy.String(),
		ClientDependent: n.dynOrder() || n.dynHealth, API: n.set.API,
	}
	if step.ClientDependent {
		step.Scope = r.nodeScope(n, q)
	}
	var azLoc *azChain
	if n.set.Policy == policyAZAffinity {
		azLoc, _ = r.azLocation(q)
		step.Location = r.azExplain(q)
	}
	step.ScopeReason = r.scopeReason(n, q, step.Scope)
	anyOK, applicable := false, false
	for i := range n.members {
		mn := &n.members[i]
		c := view.Candidate{ID: mn.m.ID, Target: target(mn), Key: policyKey(mn.m, n.set.Policy)}
		if mn.m.Check != nil {
			c.Check = mn.m.Check.Name
		}
		applies := true
		switch n.set.Policy {
		case policyGeolocation:
			applies = geoLevel(mn, &q.Loc) >= 0
		case policyIPBased:
			m, ok := n.links.ip.lookup(q.Client)
			applies = mn.m.Default || (ok && m == int32(i))
		case policyAZAffinity:
			applies = azRank(mn, azLoc) >= 0
		}
		shifted := n.set.Policy == policyAZAffinity && shiftedAway(n, mn)
		c.Healthy = r.memberOK(t, n, int32(i), q) && !shifted
		anyOK = anyOK || (c.Healthy && applies)
		applicable = applicable || applies
		c.Chosen = int32(i) == chosen || (chosen < 0 && st.mode == pickSet && slices.Contains(st.cands, int32(i)) && c.Healthy)
		switch {
		case !applies && n.set.Policy == policyAZAffinity:
			c.Reason = "does not apply: the query's location is not in " + c.Key
		case !applies:
			c.Reason = "does not apply to this client"
		case shifted:
			c.Reason = "a zonal shift moves answers away from " + c.Key + " until it ends"
		case !st.ok[i] && mn.m.Check != nil:
			c.Reason = fmt.Sprintf("check %s is unhealthy", mn.m.Check.Name)
		case !c.Healthy:
			c.Reason = fmt.Sprintf("evaluate_target_health: %s has no healthy answer for this client", mn.m.Target)
		case n.set.Policy == policyWeighted && mn.m.Weight == 0 && !c.Chosen:
			c.Reason = "weight 0: answers only when every nonzero member is unhealthy"
		case n.set.Policy == policyAZAffinity:
			c.Reason = azReason(mn, c.Chosen)
		case c.Chosen:
			c.Reason = "chosen"
		default:
			c.Reason = "healthy, not chosen"
		}
		step.Members = append(step.Members, c)
	}
	step.LastResort = applicable && !anyOK
	step.NoRecord = !applicable || (chosen < 0 && st.mode != pickSet)
	if step.LastResort {
		for i := range step.Members {
			if step.Members[i].Chosen {
				step.Members[i].Reason = "chosen as the last resort: no member is healthy"
			}
		}
	}
	q.trace.Steps = append(q.trace.Steps, step)
}

// target describes a member's target as written.
func target(mn *mnode) string {
	m := mn.m
	switch m.Kind {
	case kindA, kindAAAA:
		var b strings.Builder
		b.WriteString(m.Kind.String())
		for _, a := range m.Addrs {
			b.WriteString(" " + a.String())
		}
		return b.String()
	case kindRR:
		var b strings.Builder
		b.WriteString(m.typeName())
		for _, rr := range m.RRs {
			b.WriteString(" " + strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
		return b.String()
	case kindAlias:
		if m.Type != 0 {
			return "alias " + m.Target + " " + m.typeName()
		}
	}
	return m.Kind.String() + " " + m.Target
}

// policyKey describes a member's policy key as written.
func policyKey(m *member, p policy) string {
	switch p {
	case policyWeighted:
		return fmt.Sprintf("weight %d", m.Weight)
	case policyFailover:
		return roleName(m.Role)
	case policyLatency:
		return "region " + m.Region
	case policyGeolocation:
		if m.Default {
			return "default"
		}
		return [...]string{"subdivision ", "country ", "continent ", ""}[m.Geo] + m.GeoCode
	case policyGeoproximity:
		s := fmt.Sprintf("coordinates %g %g", m.Lat, m.Lon)
		if m.Region != "" {
			s = "region " + m.Region
		}
		if m.Bias != 0 {
			s += fmt.Sprintf(" bias %d", m.Bias)
		}
		return s
	case policyIPBased:
		if m.Default {
			return "default"
		}
		var parts []string
		for _, p := range m.CIDRs {
			parts = append(parts, p.String())
		}
		return "cidr " + strings.Join(parts, ",")
	case policyMultivalue:
		return "value"
	case policyAZAffinity:
		return azKeyString(azKey{m.AZLevel, m.AZID})
	}
	return ""
}

// scopeReason says why node n asks for ECS scope s for q; it follows nodeScope's cases.
func (r *resolver) scopeReason(n *node, q *query, s uint8) string {
	src := uint8(q.Client.Bits())
	block := netip.PrefixFrom(q.Client.Addr(), int(s)).Masked()
	for _, c := range n.healthKids() {
		if s > 0 && r.nodeScope(c, q) == s {
			return fmt.Sprintf("/%d: evaluate_target_health into %s, whose health depends on the client", s, c.set.Name)
		}
	}
	switch {
	case !(n.dynOrder() || n.dynHealth):
		return "not client-dependent: the same choice for every client"
	case n.set.Policy == policyIPBased && s > src:
		return fmt.Sprintf("/%d: a block that long lies inside the client's /%d and may answer differently (RFC 7871 7.2.1)", s, src)
	case n.set.Policy == policyIPBased && s > 0:
		return fmt.Sprintf("/%d: every address in %s matches the same block", s, block)
	case n.set.Policy == policyIPBased:
		return "no block of the client's address family: the default for every client"
	case n.set.Policy == policyAZAffinity && s > 0:
		return fmt.Sprintf("/%d: every address in %s finds the same client_location (or none)", s, block)
	case n.set.Policy == policyAZAffinity:
		return "no client_location for the client's address family: the server's location, the same for every client"
	case n.set.Policy == policyLatency && n.byLoc:
		return fmt.Sprintf("/%d: the client's geoip coordinates rank the regions", s)
	case n.set.Policy == policyLatency && s > 0:
		return fmt.Sprintf("/%d: every address in %s has the same latency_table row", s, block)
	case n.set.Policy == policyLatency:
		return "no latency_table row and no region coordinates: listed order, the same for every client"
	case n.byLoc:
		return fmt.Sprintf("/%d: the client's geoip location", s)
	case n.set.Policy == policyGeolocation:
		return "only a default record: the same for every client"
	}
	return "the same choice for every client"
}
