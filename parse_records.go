package healthroute

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
)

// parsePolicy maps a Corefile spelling to a Policy.
func parsePolicy(s string) (Policy, bool) {
	for p, n := range policyNames {
		if n != "" && n == s {
			return Policy(p), true
		}
	}
	return 0, false
}

// parseRecord reads `record NAME POLICY { MEMBERS }`; args are the line's.
func parseRecord(c *caddy.Controller, cfg *Config, args []string) (*RecordSet, error) {
	if len(args) != 2 {
		return nil, c.ArgErr()
	}
	name, ok := normalizeName(args[0], true)
	if !ok {
		return nil, c.Errf("record: invalid name '%s', expected a domain name (a leading '*.' label makes a wildcard)", args[0])
	}
	if plugin.Zones(cfg.Zones).Matches(strings.TrimPrefix(name, "*.")) == "" {
		return nil, c.Errf("record %s: not within the zones %s", name, strings.Join(cfg.Zones, " "))
	}
	pol, ok := parsePolicy(strings.ToLower(args[1]))
	if !ok {
		return nil, c.Errf("record %s: unknown policy '%s', expected simple, weighted, latency, failover, geolocation, geoproximity, multivalue or ip", name, args[1])
	}
	rs := &RecordSet{Name: name, Policy: pol, pos: pos{c.File(), c.Line()}}
	err := block(c, func(first string, args []string) error {
		m, err := parseMember(c, cfg, rs, append([]string{first}, args...))
		if err != nil {
			return err
		}
		rs.Members = append(rs.Members, m)
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case len(rs.Members) == 0 && c.Val() != "}": // no block at all
		return nil, c.Errf("record %s: expected '{' and a member on each line", name)
	case len(rs.Members) == 0:
		return nil, c.Errf("record %s: no members", name)
	}
	return rs, nil
}

// policyKeys says what a member line of each policy starts with, for error messages.
var policyKeys = map[Policy]string{
	Simple:       "a target (A, AAAA, CNAME or alias)",
	Weighted:     "'weight N'",
	Latency:      "'region NAME'",
	Failover:     "'primary' or 'secondary'",
	Multivalue:   "'value'",
	Geolocation:  "'continent XX', 'country XX', 'subdivision XX-YY' or 'default'",
	Geoproximity: "'region NAME [bias B]' or 'coordinates LAT LON [bias B]'",
	IPBased:      "'cidr PREFIX[,PREFIX...]' or 'default'",
}

// parseMember reads one member line: policy key, target, options.
func parseMember(c *caddy.Controller, cfg *Config, rs *RecordSet, a []string) (*Member, error) {
	m := &Member{pos: pos{c.File(), c.Line()}}
	bad := func() error {
		return c.Errf("record %s: '%s' is not a member key of %s records, expected %s", rs.Name, a[0], rs.Policy, policyKeys[rs.Policy])
	}
	switch rs.Policy {
	case Simple:
	case Weighted:
		if a[0] != "weight" {
			return nil, bad()
		}
		if len(a) < 2 {
			return nil, c.ArgErr()
		}
		w, err := strconv.Atoi(a[1])
		if err != nil || w < 0 || w > 255 {
			return nil, c.Errf("record %s: weight: invalid value '%s', expected a number from 0 to 255", rs.Name, a[1])
		}
		m.Weight, a = uint8(w), a[2:]
	case Failover:
		switch a[0] {
		case "primary":
			m.Role = Primary
		case "secondary":
			m.Role = Secondary
		default:
			return nil, bad()
		}
		a = a[1:]
	case Multivalue:
		if a[0] != "value" {
			return nil, bad()
		}
		a = a[1:]
	case Latency:
		if a[0] != "region" {
			return nil, bad()
		}
		if len(a) < 2 {
			return nil, c.ArgErr()
		}
		m.Region, a = a[1], a[2:]
	case Geolocation:
		var err error
		if a, err = parseGeoKey(c, rs, m, a); err != nil {
			return nil, err
		}
	case Geoproximity:
		var err error
		if a, err = parseProximityKey(c, cfg, rs, m, a); err != nil {
			return nil, err
		}
	case IPBased:
		switch a[0] {
		case "default":
			m.Default, a = true, a[1:]
		case "cidr":
			if len(a) < 2 {
				return nil, c.ArgErr()
			}
			for _, s := range strings.Split(a[1], ",") {
				p, err := netip.ParsePrefix(s)
				if err != nil || p.Addr().Zone() != "" {
					return nil, c.Errf("record %s: cidr: invalid prefix '%s', expected ADDRESS/LENGTH", rs.Name, s)
				}
				max := 24
				if p.Addr().Is6() {
					max = 48
				}
				if p.Bits() < 1 || p.Bits() > max {
					return nil, c.Errf("record %s: cidr: prefix '%s' has length %d, expected 1-%d (use 'default' for everything else)", rs.Name, s, p.Bits(), max)
				}
				m.CIDRs = append(m.CIDRs, p.Masked())
			}
			a = a[2:]
		default:
			return nil, bad()
		}
	}
	if len(a) == 0 {
		return nil, c.Errf("record %s: missing target, expected A, AAAA, CNAME or alias", rs.Name)
	}
	switch strings.ToUpper(a[0]) {
	case "A", "AAAA":
		m.Kind = KindA
		if strings.ToUpper(a[0]) == "AAAA" {
			m.Kind = KindAAAA
		}
		a = a[1:]
		for len(a) > 0 && !isOption(a[0]) {
			ip, err := netip.ParseAddr(a[0])
			if err != nil || ip.Zone() != "" || (m.Kind == KindA) != ip.Is4() {
				return nil, c.Errf("record %s: invalid %s address '%s'", rs.Name, m.Kind, a[0])
			}
			m.Addrs, a = append(m.Addrs, ip), a[1:]
		}
		if len(m.Addrs) == 0 {
			return nil, c.Errf("record %s: %s needs at least one address", rs.Name, m.Kind)
		}
	case "CNAME", "ALIAS":
		m.Kind = KindCNAME
		if strings.ToUpper(a[0]) == "ALIAS" {
			m.Kind, m.ETH = KindAlias, true // on by default: docs/routing.md#evaluate-target-health
		}
		if len(a) < 2 {
			return nil, c.Errf("record %s: %s needs a target name", rs.Name, a[0])
		}
		t, ok := normalizeName(a[1], false)
		if !ok {
			return nil, c.Errf("record %s: invalid %s target '%s', expected a domain name", rs.Name, a[0], a[1])
		}
		m.Target, a = t, a[2:]
	default:
		if rs.Policy == Simple {
			return nil, bad()
		}
		return nil, c.Errf("record %s: unknown target type '%s', expected A, AAAA, CNAME or alias", rs.Name, a[0])
	}
	given := map[string]bool{}
	for len(a) > 0 {
		if given[a[0]] {
			return nil, c.Errf("record %s: %s is given twice on one member, expected it once", rs.Name, a[0])
		}
		given[a[0]] = true
		switch a[0] {
		case "check":
			if len(a) < 2 {
				return nil, c.Errf("record %s: check needs a check name", rs.Name)
			}
			m.checkName, a = a[1], a[2:]
		case "id":
			if len(a) < 2 {
				return nil, c.Errf("record %s: id needs a set identifier", rs.Name)
			}
			m.ID, a = a[1], a[2:]
		case "evaluate_target_health":
			if m.Kind != KindAlias {
				return nil, c.Errf("record %s: evaluate_target_health applies to alias targets only", rs.Name)
			}
			m.ETH, a = true, a[1:]
			if len(a) > 0 && !isOption(a[0]) {
				switch a[0] {
				case "yes":
				case "no":
					m.ETH = false
				default:
					return nil, c.Errf("record %s: evaluate_target_health: invalid value '%s', expected yes or no", rs.Name, a[0])
				}
				a = a[1:]
			}
		default:
			return nil, c.Errf("record %s: unknown member option '%s', expected check, evaluate_target_health or id", rs.Name, a[0])
		}
	}
	if m.ID == "" {
		m.ID = defaultID(m)
	}
	return m, nil
}

// parseGeoKey reads a geolocation key: continent XX, country XX, subdivision XX-YY
// or default.
func parseGeoKey(c *caddy.Controller, rs *RecordSet, m *Member, a []string) ([]string, error) {
	if a[0] == "default" {
		m.Geo, m.Default = GeoDefault, true
		return a[1:], nil
	}
	if len(a) < 2 {
		return nil, c.ArgErr()
	}
	code := strings.ToUpper(a[1])
	switch a[0] {
	case "continent":
		if !continents[code] {
			return nil, c.Errf("record %s: continent: invalid code '%s', expected AF, AN, AS, EU, NA, OC or SA", rs.Name, a[1])
		}
		m.Geo = GeoContinent
	case "country":
		if _, ok := continentOf[code]; !ok {
			return nil, c.Errf("record %s: country: invalid code '%s', expected an ISO 3166-1 alpha-2 code", rs.Name, a[1])
		}
		m.Geo = GeoCountry
	case "subdivision":
		cc, sub, ok := strings.Cut(code, "-")
		if _, known := continentOf[cc]; !ok || !known || sub == "" || len(sub) > 3 {
			return nil, c.Errf("record %s: subdivision: invalid code '%s', expected COUNTRY-SUBDIVISION such as US-CA", rs.Name, a[1])
		}
		m.Geo = GeoSubdivision
	default:
		return nil, c.Errf("record %s: '%s' is not a member key of geolocation records, expected %s", rs.Name, a[0], policyKeys[Geolocation])
	}
	m.GeoCode = code
	return a[2:], nil
}

// parseProximityKey reads `region NAME [bias B]` or `coordinates LAT LON [bias B]`.
func parseProximityKey(c *caddy.Controller, cfg *Config, rs *RecordSet, m *Member, a []string) ([]string, error) {
	switch a[0] {
	case "region":
		if len(a) < 2 {
			return nil, c.ArgErr()
		}
		m.Region, a = a[1], a[2:] // coordinates filled in by validate: regions may come later
	case "coordinates":
		if len(a) < 3 {
			return nil, c.ArgErr()
		}
		lat, lon, ok := parseCoords(a[1], a[2])
		if !ok {
			return nil, c.Errf("record %s: coordinates: invalid '%s %s', expected %s", rs.Name, a[1], a[2], coordsWant)
		}
		m.Lat, m.Lon, a = lat, lon, a[3:]
	default:
		return nil, c.Errf("record %s: '%s' is not a member key of geoproximity records, expected %s", rs.Name, a[0], policyKeys[Geoproximity])
	}
	m.Coords = true
	if len(a) >= 2 && a[0] == "bias" {
		b, err := strconv.Atoi(a[1])
		if err != nil || b < -99 || b > 99 {
			return nil, c.Errf("record %s: bias: invalid value '%s', expected a number from -99 to 99", rs.Name, a[1])
		}
		m.Bias, a = b, a[2:]
	}
	return a, nil
}

func isOption(s string) bool {
	return s == "check" || s == "id" || s == "evaluate_target_health"
}

// defaultID derives a stable set identifier from the member's key and target.
func defaultID(m *Member) string {
	var key string
	switch {
	case m.Role == Primary:
		key = "primary-"
	case m.Role == Secondary:
		key = "secondary-"
	case m.Region != "":
		key = m.Region + "-"
	case m.Default:
		key = "default-"
	case m.GeoCode != "":
		key = m.GeoCode + "-"
	case m.Coords:
		key = strconv.FormatFloat(m.Lat, 'f', -1, 64) + "," + strconv.FormatFloat(m.Lon, 'f', -1, 64) + "-"
	case len(m.CIDRs) > 0:
		key = m.CIDRs[0].String() + "-"
	}
	switch m.Kind {
	case KindA, KindAAAA:
		return key + m.Addrs[0].String()
	default:
		return key + strings.TrimSuffix(m.Target, ".")
	}
}
