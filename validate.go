package healthroute

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// validate checks what needs the whole block: check and alias targets, cycles, set
// identifiers, per-group membership rules and type clashes.
func validate(cfg *Config) error {
	sets := map[string][]*RecordSet{} // by name: one block per type, or one for all
	parsed := cfg.state()
	for _, rs := range cfg.Records {
		sets[rs.Name] = append(sets[rs.Name], rs)
	}
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if name, ok := parsed.checkNames[m]; ok {
				spec, ok := cfg.Checks[name]
				if !ok {
					return parsed.pos[m].errorf("record %s: unknown check '%s'", rs.Name, name)
				}
				m.Check = spec
			}
			if m.Kind == KindAlias {
				if _, ok := sets[m.Target]; !ok {
					return parsed.pos[m].errorf("record %s: unknown alias target '%s', expected a record defined in this block", rs.Name, m.Target)
				}
			}
			if rs.Policy == Geoproximity {
				if m.Region != "" {
					r, ok := cfg.Regions[m.Region]
					if !ok {
						return parsed.pos[m].errorf("record %s: unknown region '%s', expected one defined with 'region NAME LATITUDE LONGITUDE'", rs.Name, m.Region)
					}
					m.Lat, m.Lon = r.Lat, r.Lon
				}
				m.Lat, m.Lon = truncate2(m.Lat), truncate2(m.Lon) // as Route 53 does
			}
			if rs.Policy == Multivalue && (m.Kind == KindAlias || m.Type == dns.TypeCNAME || m.Type == dns.TypeNS) {
				return parsed.pos[m].errorf("record %s: multivalue members must be A or AAAA or any other type but CNAME and NS, not %s", rs.Name, m.typeName())
			}
			if m.Type == dns.TypeNS && m.Kind != KindAlias {
				if strings.HasPrefix(rs.Name, "*.") {
					return parsed.pos[m].errorf("record %s: NS at a wildcard name, expected a delegation at an exact name", rs.Name)
				}
				if slices.Contains(cfg.Zones, rs.Name) {
					return parsed.pos[m].errorf("record %s: NS at the zone apex, expected the ns property for the zone's own name servers", rs.Name)
				}
			}
		}
	}
	cfg.parsing = nil // resolved: what parse left goes
	// Alias cycles, then which types each name serves (aliases inherit their targets'),
	// and how many record sets judging a name's health for one client may visit: a
	// member that evaluates target health into a client-dependent group (geolocation,
	// ip, or a group evaluating into one) is judged per query, through its branch.
	served := map[*RecordSet]types{}
	byName := map[string]types{}
	dynamic := map[string]bool{}
	paths := map[string]int{}
	state := map[string]int{}
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case 1:
			return parsed.setPos[sets[name][0]].errorf("record %s: alias cycle: %s", name, strings.Join(append(path, name), " -> "))
		case 2:
			return nil
		}
		state[name] = 1
		var all types
		n, dyn := 1, false
		for _, rs := range sets[name] {
			var k types
			dyn = dyn || rs.Policy == Geolocation || rs.Policy == IPBased || rs.Policy == AZAffinity
			for _, m := range rs.Members {
				if m.Kind != KindAlias {
					k = k.with(m.Type)
					continue
				}
				if err := visit(m.Target, append(path, name)); err != nil {
					return err
				}
				switch t := byName[m.Target]; {
				case !slices.ContainsFunc(t, func(x uint16) bool { return aliasTypes[x] }):
					return parsed.pos[m].errorf("record %s: alias target '%s' serves no records an alias can answer (NS and DS are not)", rs.Name, m.Target)
				case m.Type != 0 && !t.has(m.Type):
					return parsed.pos[m].errorf("record %s: alias target '%s' serves no %s records", rs.Name, m.Target, dns.TypeToString[m.Type])
				case m.Type != 0:
					k = k.with(m.Type)
				default: // every type of the target an alias can have: not NS or DS
					for _, x := range t {
						if aliasTypes[x] {
							k = k.with(x)
						}
					}
				}
				if m.ETH && dynamic[m.Target] {
					dyn, n = true, min(n+paths[m.Target], maxAliasPaths+1)
				}
			}
			for _, t := range k {
				if all.has(t) {
					other := sets[name][slices.IndexFunc(sets[name], func(o *RecordSet) bool { return served[o].has(t) })]
					return parsed.setPos[rs].errorf("record %s: defined twice for %s (first at line %d, directly or through aliases); a name has one block, or one block per type", name, dns.TypeToString[t], parsed.setPos[other].line)
				}
				all = all.with(t)
			}
			served[rs] = k
		}
		if n > maxAliasPaths {
			return parsed.setPos[sets[name][0]].errorf("record %s: evaluate target health into geolocation or ip groups reaches more than %d record sets counted once per path (targets shared by several aliases multiply), expected at most %d", name, maxAliasPaths, maxAliasPaths)
		}
		dynamic[name], paths[name] = dyn, n
		if all.has(dns.TypeCNAME) && len(all) > 1 {
			other := dns.TypeToString[all[slices.IndexFunc(all, func(t uint16) bool { return t != dns.TypeCNAME })]]
			if all.has(dns.TypeA) || all.has(dns.TypeAAAA) {
				other = "A/AAAA"
			}
			return parsed.setPos[sets[name][0]].errorf("record %s: CNAME and %s at one name (directly or through aliases); a CNAME must be alone", name, other)
		}
		byName[name] = all
		state[name] = 2
		return nil
	}
	for _, rs := range cfg.Records {
		if err := visit(rs.Name, nil); err != nil {
			return err
		}
	}
	// Per type group rules (each type's members form a group of their own). Set
	// identifiers are unique within a group, as Route 53 scopes them to a name and type.
	for _, rs := range cfg.Records {
		for _, t := range served[rs] {
			var group []*Member
			ids := map[string]bool{}
			for _, m := range rs.Members {
				if m.Type == t || (m.Kind == KindAlias && m.Type == 0 && aliasTypes[t] && byName[m.Target].has(t)) {
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

func validateGroup(parsed *parseState, rs *RecordSet, t string, group []*Member) error {
	if len(group) == 0 {
		return nil
	}
	switch rs.Policy {
	case Simple:
		if len(group) > 1 {
			return parsed.pos[group[1]].errorf("record %s: a simple record has one member per type, found %d for %s; list several addresses on one line", rs.Name, len(group), t)
		}
	case Failover:
		var p, s int
		for _, m := range group {
			if m.Role == Primary {
				p++
			} else {
				s++
			}
			if p > 1 || s > 1 {
				return parsed.pos[m].errorf("record %s: failover has one primary and one secondary per type, found a second %s", rs.Name, roleName(m.Role))
			}
		}
		if p == 0 {
			return parsed.setPos[rs].errorf("record %s: failover %s group has no primary", rs.Name, t)
		}
	case Weighted:
		if len(group) > maxWeighted {
			return parsed.pos[group[maxWeighted]].errorf("record %s: at most %d weighted members per type, found %d", rs.Name, maxWeighted, len(group))
		}
	case Latency:
		seen := map[string]bool{}
		for _, m := range group {
			if seen[m.Region] {
				return parsed.pos[m].errorf("record %s: region '%s' has a second %s member; latency records have one per region", rs.Name, m.Region, t)
			}
			seen[m.Region] = true
		}
	case Geolocation:
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
	case AZAffinity:
		return validateAZGroup(parsed, rs, t, group)
	case IPBased:
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

func roleName(r Role) string {
	if r == Primary {
		return "primary"
	}
	return "secondary"
}

// types is a small set of RR types, in the order first added.
type types []uint16

func (k types) with(t uint16) types {
	if k.has(t) {
		return k
	}
	return append(k, t)
}

func (k types) has(t uint16) bool { return slices.Contains(k, t) }
