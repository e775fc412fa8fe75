package healthroute

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// validate checks what needs the whole block: check and alias targets, cycles, set
// identifiers, per-group membership rules and type clashes.
func validate(cfg *Config) error {
	sets := map[string]*RecordSet{}
	cfg.members = 0
	for i, rs := range cfg.Records {
		rs.idx = i
		for _, m := range rs.Members {
			m.idx, cfg.members = cfg.members, cfg.members+1
		}
		if prev, dup := sets[rs.Name]; dup {
			return rs.pos.errorf("record %s: defined twice (first at line %d); put every member in one block", rs.Name, prev.pos.line)
		}
		sets[rs.Name] = rs
	}
	for _, rs := range cfg.Records {
		ids := map[string]bool{}
		for _, m := range rs.Members {
			if ids[m.ID] {
				return m.pos.errorf("record %s: duplicate set identifier '%s', give each member a unique id", rs.Name, m.ID)
			}
			ids[m.ID] = true
			if m.checkName != "" {
				spec, ok := cfg.Checks[m.checkName]
				if !ok {
					return m.pos.errorf("record %s: unknown check '%s'", rs.Name, m.checkName)
				}
				m.Check = spec
			}
			if m.Kind == KindAlias {
				if _, ok := sets[m.Target]; !ok {
					return m.pos.errorf("record %s: unknown alias target '%s', expected a record defined in this block", rs.Name, m.Target)
				}
			}
			if rs.Policy == Geoproximity {
				if m.Region != "" {
					r, ok := cfg.Regions[m.Region]
					if !ok {
						return m.pos.errorf("record %s: unknown region '%s', expected one defined with 'region NAME LATITUDE LONGITUDE'", rs.Name, m.Region)
					}
					m.Lat, m.Lon = r.Lat, r.Lon
				}
				m.Lat, m.Lon = truncate2(m.Lat), truncate2(m.Lon) // as Route 53 does
			}
			if rs.Policy == Multivalue && (m.Kind == KindAlias || m.Kind == KindCNAME) {
				return m.pos.errorf("record %s: multivalue members must be A or AAAA, not %s", rs.Name, m.Kind)
			}
		}
	}
	// Alias cycles, then which types each name serves (aliases inherit their targets'),
	// and how many record sets judging a name's health for one client may visit: a
	// member that evaluates target health into a client-dependent group (geolocation,
	// ip, or a group evaluating into one) is judged per query, through its branch.
	served := map[string]kinds{}
	dynamic := map[string]bool{}
	paths := map[string]int{}
	state := map[string]int{}
	var visit func(rs *RecordSet, path []string) error
	visit = func(rs *RecordSet, path []string) error {
		switch state[rs.Name] {
		case 1:
			return rs.pos.errorf("record %s: alias cycle: %s", rs.Name, strings.Join(append(path, rs.Name), " -> "))
		case 2:
			return nil
		}
		state[rs.Name] = 1
		var k kinds
		n, dyn := 1, rs.Policy == Geolocation || rs.Policy == IPBased
		for _, m := range rs.Members {
			if m.Kind != KindAlias {
				k = k.with(m.Kind)
				continue
			}
			t := sets[m.Target]
			if err := visit(t, append(path, rs.Name)); err != nil {
				return err
			}
			if served[t.Name] == 0 {
				return m.pos.errorf("record %s: alias target '%s' serves no records", rs.Name, m.Target)
			}
			k |= served[t.Name]
			if m.ETH && dynamic[t.Name] {
				dyn, n = true, min(n+paths[t.Name], maxAliasPaths+1)
			}
		}
		if n > maxAliasPaths {
			return rs.pos.errorf("record %s: evaluate target health into geolocation or ip groups reaches more than %d record sets counted once per path (targets shared by several aliases multiply), expected at most %d", rs.Name, maxAliasPaths, maxAliasPaths)
		}
		dynamic[rs.Name], paths[rs.Name] = dyn, n
		if k.has(KindCNAME) && (k.has(KindA) || k.has(KindAAAA)) {
			return rs.pos.errorf("record %s: CNAME and A/AAAA at one name (directly or through aliases); a CNAME must be alone", rs.Name)
		}
		served[rs.Name] = k
		state[rs.Name] = 2
		return nil
	}
	for _, rs := range cfg.Records {
		if err := visit(rs, nil); err != nil {
			return err
		}
	}
	// Per type group rules (A and AAAA members form separate groups).
	for _, rs := range cfg.Records {
		for _, t := range []Kind{KindA, KindAAAA, KindCNAME} {
			var group []*Member
			for _, m := range rs.Members {
				if m.Kind == t || (m.Kind == KindAlias && served[m.Target].has(t)) {
					group = append(group, m)
				}
			}
			if err := validateGroup(rs, t, group); err != nil {
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

func validateGroup(rs *RecordSet, t Kind, group []*Member) error {
	if len(group) == 0 {
		return nil
	}
	switch rs.Policy {
	case Simple:
		if len(group) > 1 {
			return group[1].pos.errorf("record %s: a simple record has one member per type, found %d for %s; list several addresses on one line", rs.Name, len(group), t)
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
				return m.pos.errorf("record %s: failover has one primary and one secondary per type, found a second %s", rs.Name, roleName(m.Role))
			}
		}
		if p == 0 {
			return rs.pos.errorf("record %s: failover %s group has no primary", rs.Name, t)
		}
	case Weighted:
		if len(group) > 100 {
			return group[100].pos.errorf("record %s: at most 100 weighted members per type, found %d", rs.Name, len(group))
		}
	case Latency:
		seen := map[string]bool{}
		for _, m := range group {
			if seen[m.Region] {
				return m.pos.errorf("record %s: region '%s' has a second %s member; latency records have one per region", rs.Name, m.Region, t)
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
				return m.pos.errorf("record %s: location '%s' has a second %s member", rs.Name, key, t)
			}
			seen[key] = true
		}
		if !seen["default"] {
			log.Warningf("record %s: geolocation %s group has no default: clients elsewhere get no answer", rs.Name, t)
		}
	case IPBased:
		seen := map[netip.Prefix]bool{}
		defaults := 0
		for _, m := range group {
			if m.Default {
				if defaults++; defaults > 1 {
					return m.pos.errorf("record %s: a second %s default member", rs.Name, t)
				}
			}
			for _, p := range m.CIDRs {
				if seen[p] {
					return m.pos.errorf("record %s: prefix %s is in two %s members", rs.Name, p, t)
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

// kinds is a set of Kind.
type kinds uint8

func (k kinds) with(x Kind) kinds { return k | 1<<x }
func (k kinds) has(x Kind) bool   { return k&(1<<x) != 0 }

// qtype maps a member kind to its RR type.
func (k Kind) qtype() uint16 {
	switch k {
	case KindA:
		return dns.TypeA
	case KindAAAA:
		return dns.TypeAAAA
	case KindCNAME:
		return dns.TypeCNAME
	}
	panic(fmt.Sprintf("kind %s has no RR type", k))
}
