package healthroute

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// validate checks what needs the whole block: check and alias targets, cycles, set
// identifiers, per-group membership rules and type clashes.
func validate(cfg *blockConfig) error {
	sets := map[string][]*routing.RecordSet{} // by name: one block per type, or one for all
	parsed := cfg.state()
	for _, rs := range cfg.Records {
		sets[rs.Name] = append(sets[rs.Name], rs)
	}
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if err := resolveMember(cfg, parsed, sets, rs, m); err != nil {
				return err
			}
		}
	}
	w := aliasWalk{parsed: parsed, sets: sets, served: map[*routing.RecordSet]routing.Types{}, byName: map[string]routing.Types{},
		dynamic: map[string]bool{}, paths: map[string]int{}, state: map[string]int{}}
	for _, rs := range cfg.Records {
		if err := w.visit(rs.Name, nil); err != nil {
			return err
		}
	}
	return validateGroups(cfg, parsed, &w)
}

// resolveMember binds m's check and region by name and refuses what a member of rs's
// policy and name cannot be.
func resolveMember(cfg *blockConfig, parsed *parseState, sets map[string][]*routing.RecordSet, rs *routing.RecordSet, m *routing.Member) error {
	if name, ok := parsed.checkNames[m]; ok {
		spec, ok := cfg.Checks[name]
		if !ok {
			return parsed.pos[m].errorf("record %s: unknown check '%s'", rs.Name, name)
		}
		m.Check = spec
	}
	if m.Kind == routing.KindAlias {
		if _, ok := sets[m.Target]; !ok {
			return parsed.pos[m].errorf("record %s: unknown alias target '%s', expected a record defined in this block", rs.Name, m.Target)
		}
	}
	if rs.Policy == routing.PolicyGeoproximity {
		if m.Region != "" {
			r, ok := cfg.Regions[m.Region]
			if !ok {
				return parsed.pos[m].errorf("record %s: unknown region '%s', expected one defined with 'region NAME LATITUDE LONGITUDE'", rs.Name, m.Region)
			}
			m.Lat, m.Lon = r.Lat, r.Lon
		}
		m.Lat, m.Lon = routing.Truncate2(m.Lat), routing.Truncate2(m.Lon) // as Route 53 does
	}
	if rs.Policy == routing.PolicyMultivalue && (m.Kind == routing.KindAlias || m.Type == dns.TypeCNAME || m.Type == dns.TypeNS) {
		return parsed.pos[m].errorf("record %s: multivalue members must be A or AAAA or any other type but CNAME and NS, not %s", rs.Name, m.TypeName())
	}
	if m.Type == dns.TypeNS && m.Kind != routing.KindAlias {
		if strings.HasPrefix(rs.Name, "*.") {
			return parsed.pos[m].errorf("record %s: NS at a wildcard name, expected a delegation at an exact name", rs.Name)
		}
		if slices.Contains(cfg.Zones, rs.Name) {
			return parsed.pos[m].errorf("record %s: NS at the zone apex, expected the ns property for the zone's own name servers", rs.Name)
		}
	}
	return nil
}

// aliasWalk finds alias cycles, then which types each name serves (aliases inherit
// their targets'), and how many record sets judging a name's health for one client
// may visit: a member that evaluates target health into a client-dependent group
// (geolocation, ip, azaffinity, or a group evaluating into one) is judged per query,
// through its branch.
type aliasWalk struct {
	parsed  *parseState
	sets    map[string][]*routing.RecordSet
	served  map[*routing.RecordSet]routing.Types // the types each record set answers
	byName  map[string]routing.Types             // and each name
	dynamic map[string]bool                      // judged per client
	paths   map[string]int                       // record sets visited judging it, counted per path
	state   map[string]int                       // 1: being visited, 2: done
}

func (w *aliasWalk) visit(name string, path []string) error {
	switch w.state[name] {
	case 1:
		return w.parsed.setPos[w.sets[name][0]].errorf("record %s: alias cycle: %s", name, strings.Join(append(path, name), " -> "))
	case 2:
		return nil
	}
	w.state[name] = 1
	var all routing.Types
	n, dyn := 1, false
	for _, rs := range w.sets[name] {
		var k routing.Types
		dyn = dyn || rs.Policy == routing.PolicyGeolocation || rs.Policy == routing.PolicyIPBased || rs.Policy == routing.PolicyAZAffinity
		for _, m := range rs.Members {
			if m.Kind != routing.KindAlias {
				k = k.With(m.Type)
				continue
			}
			if err := w.visit(m.Target, append(path, name)); err != nil {
				return err
			}
			var err error
			if k, err = w.aliasTypes(rs, m, k); err != nil {
				return err
			}
			if m.ETH && w.dynamic[m.Target] {
				dyn, n = true, min(n+w.paths[m.Target], maxAliasPaths+1)
			}
		}
		for _, t := range k {
			if all.Has(t) {
				other := w.sets[name][slices.IndexFunc(w.sets[name], func(o *routing.RecordSet) bool { return w.served[o].Has(t) })]
				return w.parsed.setPos[rs].errorf("record %s: defined twice for %s (first at line %d, directly or through aliases); a name has one block, or one block per type", name, dns.TypeToString[t], w.parsed.setPos[other].line)
			}
			all = all.With(t)
		}
		w.served[rs] = k
	}
	if n > maxAliasPaths {
		return w.parsed.setPos[w.sets[name][0]].errorf("record %s: evaluate target health into geolocation or ip groups reaches more than %d record sets counted once per path (targets shared by several aliases multiply), expected at most %d", name, maxAliasPaths, maxAliasPaths)
	}
	w.dynamic[name], w.paths[name] = dyn, n
	if all.Has(dns.TypeCNAME) && len(all) > 1 {
		other := dns.TypeToString[all[slices.IndexFunc(all, func(t uint16) bool { return t != dns.TypeCNAME })]]
		if all.Has(dns.TypeA) || all.Has(dns.TypeAAAA) {
			other = "A/AAAA"
		}
		return w.parsed.setPos[w.sets[name][0]].errorf("record %s: CNAME and %s at one name (directly or through aliases); a CNAME must be alone", name, other)
	}
	w.byName[name] = all
	w.state[name] = 2
	return nil
}

// AliasTypes adds to k the types alias member m of rs answers: its type, or every type
// of its target an alias can have (not NS or DS).
func (w *aliasWalk) aliasTypes(rs *routing.RecordSet, m *routing.Member, k routing.Types) (routing.Types, error) {
	switch t := w.byName[m.Target]; {
	case !slices.ContainsFunc(t, func(x uint16) bool { return routing.AliasTypes[x] }):
		return k, w.parsed.pos[m].errorf("record %s: alias target '%s' serves no records an alias can answer (NS and DS are not)", rs.Name, m.Target)
	case m.Type != 0 && !t.Has(m.Type):
		return k, w.parsed.pos[m].errorf("record %s: alias target '%s' serves no %s records", rs.Name, m.Target, dns.TypeToString[m.Type])
	case m.Type != 0:
		return k.With(m.Type), nil
	default:
		for _, x := range t {
			if routing.AliasTypes[x] {
				k = k.With(x)
			}
		}
		return k, nil
	}
}

// validateGroups checks the rules of each type group (each type's members form a group
// of their own). Set identifiers are unique within a group, as Route 53 scopes them to
// a name and type.
func validateGroups(cfg *blockConfig, parsed *parseState, w *aliasWalk) error {
	for _, rs := range cfg.Records {
		for _, t := range w.served[rs] {
			var group []*routing.Member
			ids := map[string]bool{}
			for _, m := range rs.Members {
				if m.Type == t || (m.Kind == routing.KindAlias && m.Type == 0 && routing.AliasTypes[t] && w.byName[m.Target].Has(t)) {
					if ids[m.ID] {
						return parsed.pos[m].errorf("record %s: duplicate set identifier '%s' among the %s members, give each member of a type a unique id", rs.Name, m.ID, dns.TypeToString[t])
					}
					ids[m.ID] = true
					group = append(group, m)
				}
			}
			if err := validateGroup(parsed, rs, dns.TypeToString[t], group); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxAliasPaths bounds the record sets a query may visit to judge evaluate target
// health into client-dependent groups below one name, counted once per path (the
// judgement is per client, so it is not precomputed). Aliases that share targets level
// after level double that count at each level.
const maxAliasPaths = 10_000

func validateGroup(parsed *parseState, rs *routing.RecordSet, t string, group []*routing.Member) error {
	if len(group) == 0 {
		return nil
	}
	switch rs.Policy {
	case routing.PolicySimple:
		if len(group) > 1 {
			return parsed.pos[group[1]].errorf("record %s: a simple record has one member per type, found %d for %s; list several addresses on one line", rs.Name, len(group), t)
		}
	case routing.PolicyFailover:
		var p, s int
		for _, m := range group {
			if m.Role == routing.RolePrimary {
				p++
			} else {
				s++
			}
			if p > 1 || s > 1 {
				return parsed.pos[m].errorf("record %s: failover has one primary and one secondary per type, found a second %s", rs.Name, routing.RoleName(m.Role))
			}
		}
		if p == 0 {
			return parsed.setPos[rs].errorf("record %s: failover %s group has no primary", rs.Name, t)
		}
	case routing.PolicyWeighted:
		if len(group) > routing.MaxWeighted {
			return parsed.pos[group[routing.MaxWeighted]].errorf("record %s: at most %d weighted members per type, found %d", rs.Name, routing.MaxWeighted, len(group))
		}
	case routing.PolicyLatency:
		seen := map[string]bool{}
		for _, m := range group {
			if seen[m.Region] {
				return parsed.pos[m].errorf("record %s: region '%s' has a second %s member; latency records have one per region", rs.Name, m.Region, t)
			}
			seen[m.Region] = true
		}
	case routing.PolicyGeolocation:
		seen := map[string]bool{}
		for _, m := range group {
			key := m.GeoCode
			if m.Default {
				key = "default"
			}
			if seen[key] {
				return parsed.pos[m].errorf("record %s: location '%s' has a second %s member", rs.Name, key, t)
			}
			seen[key] = true
		}
		if !seen["default"] {
			log.Warningf("record %s: geolocation %s group has no default: clients elsewhere get no answer", rs.Name, t)
		}
	case routing.PolicyAZAffinity:
		return validateAZGroup(parsed, rs, t, group)
	case routing.PolicyIPBased:
		seen := map[netip.Prefix]bool{}
		defaults := 0
		for _, m := range group {
			if m.Default {
				if defaults++; defaults > 1 {
					return parsed.pos[m].errorf("record %s: a second %s default member", rs.Name, t)
				}
			}
			for _, p := range m.CIDRs {
				if seen[p] {
					return parsed.pos[m].errorf("record %s: prefix %s is in two %s members", rs.Name, p, t)
				}
				seen[p] = true
			}
		}
		if defaults == 0 {
			log.Warningf("record %s: ip %s group has no default: unmatched clients get no answer", rs.Name, t)
		}
	}
	return nil
}

// validateAZGroup refuses two members of one group for one location.
func validateAZGroup(parsed *parseState, rs *routing.RecordSet, t string, group []*routing.Member) error {
	seen := map[routing.AZKey]bool{}
	for _, m := range group {
		k := routing.AZKey{Level: m.AZLevel, ID: m.AZID}
		if seen[k] {
			return parsed.pos[m].errorf("record %s: location '%s' has a second %s member; azaffinity records have one per location", rs.Name, routing.AZKeyString(k), t)
		}
		seen[k] = true
	}
	if !seen[routing.AZKey{Level: routing.AZGlobal}] {
		log.Warningf("record %s: azaffinity %s group has no global member: queries from unknown locations get no answer", rs.Name, t)
	}
	return nil
}
