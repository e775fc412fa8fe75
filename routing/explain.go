package routing

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
func (r *Resolver) Explain(q Query) (Answer, *view.Trace) {
	tr := &view.Trace{}
	q.trace = tr
	var ans Answer
	r.ResolveInto(&q, &ans)
	tr.NextPlugin = ans.Pass && r.Plan.fall.Through(q.Name)
	return ans, tr
}

// explain records the decision at node n; chosen is the member picked (-1: a
// multivalue set, or no record for this client).
func (r *Resolver) explain(t *Table, n *Node, q *Query, chosen int32) {
	st := t.State(n.ID)
	step := view.Step{
		Record: n.Set.Name, Type: dns.TypeToString[n.QType], Policy: n.Set.Policy.String(),
		ClientDependent: n.dynOrder() || n.DynHealth, API: n.Set.API,
	}
	if step.ClientDependent {
		step.Scope = r.nodeScope(n, q)
	}
	var azLoc *AZChain
	if n.Set.Policy == PolicyAZAffinity {
		azLoc, _ = r.azLocation(q)
		step.Location = r.azExplain(q)
	}
	step.ScopeReason = r.scopeReason(n, q, step.Scope)
	anyOK, applicable := false, false
	for i := range n.Members {
		mn := &n.Members[i]
		c := view.Candidate{ID: mn.Member.ID, Target: target(mn), Key: policyKey(mn.Member, n.Set.Policy)}
		if mn.Member.Check != nil {
			c.Check = mn.Member.Check.Name
		}
		applies := true
		switch n.Set.Policy {
		case PolicyGeolocation:
			applies = geoLevel(mn, &q.Loc) >= 0
		case PolicyIPBased:
			m, ok := n.links.ip.Lookup(q.Client)
			applies = mn.Member.Default || (ok && m == int32(i))
		case PolicyAZAffinity:
			applies = azRank(mn, azLoc) >= 0
		}
		shifted := n.Set.Policy == PolicyAZAffinity && shiftedAway(n, mn)
		c.Healthy = r.memberOK(t, n, int32(i), q) && !shifted
		anyOK = anyOK || (c.Healthy && applies)
		applicable = applicable || applies
		c.Chosen = int32(i) == chosen || (chosen < 0 && st.mode == pickSet && slices.Contains(st.Cands, int32(i)) && c.Healthy)
		switch {
		case !applies && n.Set.Policy == PolicyAZAffinity:
			c.Reason = "does not apply: the query's location is not in " + c.Key
		case !applies:
			c.Reason = "does not apply to this client"
		case shifted:
			c.Reason = "a zonal shift moves answers away from " + c.Key + " until it ends"
		case !st.OK[i] && mn.Member.Check != nil:
			c.Reason = fmt.Sprintf("check %s is unhealthy", mn.Member.Check.Name)
		case !c.Healthy:
			c.Reason = fmt.Sprintf("evaluate_target_health: %s has no healthy answer for this client", mn.Member.Target)
		case n.Set.Policy == PolicyWeighted && mn.Member.Weight == 0 && !c.Chosen:
			c.Reason = "weight 0: answers only when every nonzero member is unhealthy"
		case n.Set.Policy == PolicyAZAffinity:
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
func target(mn *MemberNode) string {
	m := mn.Member
	switch m.Kind {
	case KindA, KindAAAA:
		var b strings.Builder
		b.WriteString(m.Kind.String())
		for _, a := range m.Addrs {
			b.WriteString(" " + a.String())
		}
		return b.String()
	case KindRR:
		var b strings.Builder
		b.WriteString(m.TypeName())
		for _, rr := range m.RRs {
			b.WriteString(" " + strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
		return b.String()
	case KindAlias:
		if m.Type != 0 {
			return "alias " + m.Target + " " + m.TypeName()
		}
	}
	return m.Kind.String() + " " + m.Target
}

// policyKey describes a member's policy key as written.
func policyKey(m *Member, p Policy) string {
	switch p {
	case PolicyWeighted:
		return fmt.Sprintf("weight %d", m.Weight)
	case PolicyFailover:
		return RoleName(m.Role)
	case PolicyLatency:
		return "region " + m.Region
	case PolicyGeolocation:
		if m.Default {
			return "default"
		}
		return [...]string{"subdivision ", "country ", "continent ", ""}[m.Geo] + m.GeoCode
	case PolicyGeoproximity:
		s := fmt.Sprintf("coordinates %g %g", m.Lat, m.Lon)
		if m.Region != "" {
			s = "region " + m.Region
		}
		if m.Bias != 0 {
			s += fmt.Sprintf(" bias %d", m.Bias)
		}
		return s
	case PolicyIPBased:
		if m.Default {
			return "default"
		}
		var parts []string
		for _, p := range m.CIDRs {
			parts = append(parts, p.String())
		}
		return "cidr " + strings.Join(parts, ",")
	case PolicyMultivalue:
		return "value"
	case PolicyAZAffinity:
		return AZKeyString(AZKey{m.AZLevel, m.AZID})
	}
	return ""
}

// scopeReason says why node n asks for ECS scope s for q; it follows nodeScope's cases.
func (r *Resolver) scopeReason(n *Node, q *Query, s uint8) string {
	src := uint8(q.Client.Bits())
	block := netip.PrefixFrom(q.Client.Addr(), int(s)).Masked()
	for _, c := range n.healthKids() {
		if s > 0 && r.nodeScope(c, q) == s {
			return fmt.Sprintf("/%d: evaluate_target_health into %s, whose health depends on the client", s, c.Set.Name)
		}
	}
	switch {
	case !(n.dynOrder() || n.DynHealth):
		return "not client-dependent: the same choice for every client"
	case n.Set.Policy == PolicyIPBased && s > src:
		return fmt.Sprintf("/%d: a block that long lies inside the client's /%d and may answer differently (RFC 7871 7.2.1)", s, src)
	case n.Set.Policy == PolicyIPBased && s > 0:
		return fmt.Sprintf("/%d: every address in %s matches the same block", s, block)
	case n.Set.Policy == PolicyIPBased:
		return "no block of the client's address family: the default for every client"
	case n.Set.Policy == PolicyAZAffinity && s > 0:
		return fmt.Sprintf("/%d: every address in %s finds the same client_location (or none)", s, block)
	case n.Set.Policy == PolicyAZAffinity:
		return "no client_location for the client's address family: the server's location, the same for every client"
	case n.Set.Policy == PolicyLatency && n.byLoc:
		return fmt.Sprintf("/%d: the client's geoip coordinates rank the regions", s)
	case n.Set.Policy == PolicyLatency && s > 0:
		return fmt.Sprintf("/%d: every address in %s has the same latency_table row", s, block)
	case n.Set.Policy == PolicyLatency:
		return "no latency_table row and no region coordinates: listed order, the same for every client"
	case n.byLoc:
		return fmt.Sprintf("/%d: the client's geoip location", s)
	case n.Set.Policy == PolicyGeolocation:
		return "only a default record: the same for every client"
	}
	return "the same choice for every client"
}
