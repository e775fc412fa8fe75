package healthroute

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/routing"
)

// parsePolicy maps a Corefile spelling to a Policy.
func parsePolicy(s string) (routing.Policy, bool) {
	for p, n := range routing.PolicyNames {
		if n != "" && n == s {
			return routing.Policy(p), true
		}
	}
	return 0, false
}

// parseRecord reads `record NAME POLICY { MEMBERS }`; args are the line's.
func parseRecord(c *caddy.Controller, cfg *blockConfig, args []string) (*routing.RecordSet, error) {
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
		return nil, c.Errf("record %s: unknown policy '%s', expected simple, weighted, latency, failover, geolocation, geoproximity, multivalue, ip or azaffinity", name, args[1])
	}
	rs := &routing.RecordSet{Name: name, Policy: pol}
	cfg.state().setPos[rs] = pos{c.File(), c.Line()}
	ttlLine := 0
	err := block(c, func(first string, args []string) error {
		if first == "ttl" {
			if ttlLine != 0 {
				return c.Errf("record %s: ttl is given twice (first at line %d), expected it once", name, ttlLine)
			}
			if len(args) != 1 {
				return c.ArgErr()
			}
			n, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil || n > math.MaxInt32 {
				return c.Errf("record %s: ttl: invalid value '%s', expected seconds from 0 to %d", name, args[0], math.MaxInt32)
			}
			ttlLine, rs.TTL, rs.HasTTL = c.Line(), uint32(n), true
			return nil
		}
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
	rs.Members = slices.Clip(slices.Clone(rs.Members)) // exactly as long as it is: the configuration keeps it
	return rs, nil
}

// policyKeys says what a member line of each policy starts with, for error messages.
var policyKeys = map[routing.Policy]string{
	routing.PolicySimple:       "a target (" + targetTypes + ")",
	routing.PolicyWeighted:     "'weight N'",
	routing.PolicyLatency:      "'region NAME'",
	routing.PolicyFailover:     "'primary' or 'secondary'",
	routing.PolicyMultivalue:   "'value'",
	routing.PolicyGeolocation:  "'continent XX', 'country XX', 'subdivision XX-YY' or 'default'",
	routing.PolicyGeoproximity: "'region NAME [bias B]' or 'coordinates LAT LON [bias B]'",
	routing.PolicyIPBased:      "'cidr PREFIX[,PREFIX...]' or 'default'",
	routing.PolicyAZAffinity:   "'az ID', 'zone_group ID', 'region ID', 'partition ID' or 'global'",
}

// parseMember reads one member line: policy key, target, options.
func parseMember(c *caddy.Controller, cfg *blockConfig, rs *routing.RecordSet, a []string) (*routing.Member, error) {
	m := &routing.Member{}
	cfg.state().pos[m] = pos{c.File(), c.Line()}
	bad := func() error {
		return c.Errf("record %s: '%s' is not a member key of %s records, expected %s", rs.Name, a[0], rs.Policy, policyKeys[rs.Policy])
	}
	switch rs.Policy {
	case routing.PolicyLatency, routing.PolicyGeolocation, routing.PolicyGeoproximity, routing.PolicyIPBased, routing.PolicyAZAffinity:
		m.Place = new(routing.Place)
	}
	switch rs.Policy {
	case routing.PolicySimple:
	case routing.PolicyWeighted:
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
	case routing.PolicyFailover:
		switch a[0] {
		case "primary":
			m.Role = routing.RolePrimary
		case "secondary":
			m.Role = routing.RoleSecondary
		default:
			return nil, bad()
		}
		a = a[1:]
	case routing.PolicyMultivalue:
		if a[0] != "value" {
			return nil, bad()
		}
		a = a[1:]
	case routing.PolicyLatency:
		if a[0] != "region" {
			return nil, bad()
		}
		if len(a) < 2 {
			return nil, c.ArgErr()
		}
		m.Region, a = a[1], a[2:]
	case routing.PolicyGeolocation:
		var err error
		if a, err = parseGeoKey(c, rs, m, a); err != nil {
			return nil, err
		}
	case routing.PolicyGeoproximity:
		var err error
		if a, err = parseProximityKey(c, cfg, rs, m, a); err != nil {
			return nil, err
		}
	case routing.PolicyAZAffinity:
		var err error
		if a, err = parseAZKey(c, rs, m, a); err != nil {
			return nil, err
		}
	case routing.PolicyIPBased:
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
		return nil, c.Errf("record %s: missing target, expected %s", rs.Name, targetTypes)
	}
	var err error
	if a, err = parseTarget(c, cfg, rs, m, a); err != nil {
		return nil, err
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
			cfg.state().checkNames[m], a = a[1], a[2:]
		case "id":
			if len(a) < 2 {
				return nil, c.Errf("record %s: id needs a set identifier", rs.Name)
			}
			m.ID, a = a[1], a[2:]
		case "evaluate_target_health":
			if m.Kind != routing.KindAlias {
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
		id := defaultID(m)
		ids := cfg.state().ids
		if shared, ok := ids[id]; ok {
			id = shared
		} else {
			ids[id] = id
		}
		m.ID = id
	}
	return m, nil
}

// parseGeoKey reads a geolocation key: continent XX, country XX, subdivision XX-YY
// or default.
func parseGeoKey(c *caddy.Controller, rs *routing.RecordSet, m *routing.Member, a []string) ([]string, error) {
	if a[0] == "default" {
		m.Geo, m.Default = routing.GeoDefault, true
		return a[1:], nil
	}
	if len(a) < 2 {
		return nil, c.ArgErr()
	}
	code := strings.ToUpper(a[1])
	switch a[0] {
	case "continent":
		if !routing.Continents[code] {
			return nil, c.Errf("record %s: continent: invalid code '%s', expected AF, AN, AS, EU, NA, OC or SA", rs.Name, a[1])
		}
		m.Geo = routing.GeoContinent
	case "country":
		if _, ok := routing.ContinentOf[code]; !ok {
			return nil, c.Errf("record %s: country: invalid code '%s', expected an ISO 3166-1 alpha-2 code", rs.Name, a[1])
		}
		m.Geo = routing.GeoCountry
	case "subdivision":
		cc, sub, ok := strings.Cut(code, "-")
		if _, known := routing.ContinentOf[cc]; !ok || !known || sub == "" || len(sub) > 3 {
			return nil, c.Errf("record %s: subdivision: invalid code '%s', expected COUNTRY-SUBDIVISION such as US-CA", rs.Name, a[1])
		}
		m.Geo = routing.GeoSubdivision
	default:
		return nil, c.Errf("record %s: '%s' is not a member key of geolocation records, expected %s", rs.Name, a[0], policyKeys[routing.PolicyGeolocation])
	}
	m.GeoCode = code
	return a[2:], nil
}

// parseProximityKey reads `region NAME [bias B]` or `coordinates LAT LON [bias B]`.
func parseProximityKey(c *caddy.Controller, cfg *blockConfig, rs *routing.RecordSet, m *routing.Member, a []string) ([]string, error) {
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
		return nil, c.Errf("record %s: '%s' is not a member key of geoproximity records, expected %s", rs.Name, a[0], policyKeys[routing.PolicyGeoproximity])
	}
	m.Coords = true
	if len(a) >= 2 && a[0] == "bias" {
		b, err := strconv.Atoi(a[1])
		if err != nil || b < -99 || b > 99 {
			return nil, c.Errf("record %s: bias: invalid value '%s', expected a number from -99 to 99", rs.Name, a[1])
		}
		m.Bias, a = int8(b), a[2:]
	}
	return a, nil
}

func isOption(s string) bool {
	return s == "check" || s == "id" || s == "evaluate_target_health"
}

// defaultID derives a stable set identifier from the member's key and target.
func defaultID(m *routing.Member) string {
	var key string
	switch {
	case m.Role == routing.RolePrimary:
		key = "primary-"
	case m.Role == routing.RoleSecondary:
		key = "secondary-"
	case m.Place == nil: // no other key
	case m.AZLevel != 0:
		key = routing.AZKeyString(routing.AZKey{Level: m.AZLevel, ID: m.AZID}) + "-"
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
	case routing.KindA, routing.KindAAAA:
		return key + m.Addrs[0].String()
	case routing.KindRR:
		return key + strings.ToLower(dns.TypeToString[m.Type]) + "-" + strings.TrimPrefix(m.RRs[0].String(), m.RRs[0].Header().String())
	default:
		return key + strings.TrimSuffix(m.Target, ".")
	}
}

// targetTypes lists the member target types, for error messages.
const targetTypes = "A, AAAA, CNAME, alias, MX, TXT, SPF, SRV, CAA, NS, PTR, NAPTR or DS"

// rrFields is the number of presentation fields of one value of each type a member
// target can hold besides A, AAAA, CNAME, TXT and SPF.
var rrFields = map[uint16]int{
	dns.TypeMX: 2, dns.TypeSRV: 4, dns.TypeCAA: 3, dns.TypeNAPTR: 6, dns.TypeDS: 4,
	dns.TypeNS: 1, dns.TypePTR: 1,
}

// quotedFields are the character-string fields of a value, by type: the Corefile
// lexer unquotes them, and they go back between quotes for the zone-file parser.
var quotedFields = map[uint16][]int{dns.TypeCAA: {2}, dns.TypeNAPTR: {2, 3, 4}}

// parseTarget reads a member's target: `A ADDR...`, `AAAA ADDR...`, `CNAME NAME`,
// `alias NAME [TYPE]` or `TYPE VALUE...` in zone-file presentation format, and
// returns what follows it.
func parseTarget(c *caddy.Controller, cfg *blockConfig, rs *routing.RecordSet, m *routing.Member, a []string) ([]string, error) {
	typ := strings.ToUpper(a[0])
	switch typ {
	case "A", "AAAA":
		m.Kind, m.Type = routing.KindA, dns.TypeA
		if typ == "AAAA" {
			m.Kind, m.Type = routing.KindAAAA, dns.TypeAAAA
		}
		a = a[1:]
		n := 0
		for n < len(a) && !isOption(a[n]) {
			n++
		}
		if n == 0 {
			return nil, c.Errf("record %s: %s needs at least one address", rs.Name, m.Kind)
		}
		addrs := make([]netip.Addr, n)
		for i, s := range a[:n] {
			ip, err := netip.ParseAddr(s)
			if err != nil || ip.Zone() != "" || (m.Kind == routing.KindA) != ip.Is4() {
				return nil, c.Errf("record %s: invalid %s address '%s'", rs.Name, m.Kind, s)
			}
			addrs[i] = ip
		}
		m.Ref = cfg.state().share(routing.Ref{Addrs: addrs}) // members of many names often point at the same address
		return a[n:], nil
	case "CNAME", "ALIAS":
		m.Kind, m.Type = routing.KindCNAME, dns.TypeCNAME
		if typ == "ALIAS" {
			m.Kind, m.Type, m.ETH = routing.KindAlias, 0, true // on by default: docs/routing.md#evaluate-target-health
		}
		if len(a) < 2 {
			return nil, c.Errf("record %s: %s needs a target name", rs.Name, a[0])
		}
		t, ok := normalizeName(a[1], false)
		if !ok {
			return nil, c.Errf("record %s: invalid %s target '%s', expected a domain name", rs.Name, a[0], a[1])
		}
		m.Ref = cfg.state().share(routing.Ref{Target: t})
		a = a[2:]
		if m.Kind == routing.KindAlias && len(a) > 0 && !isOption(a[0]) {
			at := dns.StringToType[strings.ToUpper(a[0])]
			if !routing.AliasTypes[at] {
				return nil, c.Errf("record %s: alias: invalid type '%s', expected A, AAAA, CNAME, MX, TXT, SPF, SRV, CAA, PTR or NAPTR", rs.Name, a[0])
			}
			m.Type, a = at, a[1:]
		}
		return a, nil
	}
	t, ok := dns.StringToType[typ]
	n, known := rrFields[t]
	if !ok || (!known && t != dns.TypeTXT && t != dns.TypeSPF) {
		if rs.Policy == routing.PolicySimple {
			return nil, c.Errf("record %s: '%s' is not a member key of simple records, expected %s", rs.Name, a[0], policyKeys[routing.PolicySimple])
		}
		return nil, c.Errf("record %s: unknown target type '%s', expected %s", rs.Name, a[0], targetTypes)
	}
	m.Kind, m.Type, m.Ref, a = routing.KindRR, t, &routing.Ref{}, a[1:]
	zone := plugin.Zones(cfg.Zones).Matches(strings.TrimPrefix(rs.Name, "*."))
	for len(a) > 0 && !isOption(a[0]) {
		var rdata string
		if n == 0 { // TXT, SPF: one token per value
			rdata, a = a[0], a[1:]
			if !strings.HasPrefix(rdata, `"`) {
				rdata = `"` + strings.ReplaceAll(rdata, `"`, `\"`) + `"`
			}
		} else {
			if len(a) < n || slices.ContainsFunc(a[:n], isOption) {
				return nil, c.Errf("record %s: %s value '%s' has too few fields, expected %d", rs.Name, typ, strings.Join(a[:min(n, len(a))], " "), n)
			}
			f := slices.Clone(a[:n])
			for i := range f {
				switch {
				case slices.Contains(quotedFields[t], i):
					f[i] = `"` + f[i] + `"`
				case f[i] == "" || strings.ContainsAny(f[i], " \t\r\n;()\""):
					// The zone-file parser would read a blank, comment or parenthesis
					// as syntax, and a value other than the one written.
					return nil, c.Errf("record %s: invalid %s value '%s': field '%s' is not one presentation field", rs.Name, typ, strings.Join(a[:n], " "), f[i])
				}
			}
			rdata, a = strings.Join(f, " "), a[n:]
		}
		rr, err := parseRR(rs.Name, zone, typ, rdata)
		if err != nil {
			return nil, c.Errf("record %s: invalid %s value '%s': %v", rs.Name, typ, rdata, err)
		}
		m.RRs = append(m.RRs, rr)
	}
	if len(m.RRs) == 0 {
		return nil, c.Errf("record %s: %s needs at least one value", rs.Name, typ)
	}
	return a, nil
}

// parseRR reads one value as a zone file line would hold it, relative names
// completed with zone.
func parseRR(owner, zone, typ, rdata string) (dns.RR, error) {
	zp := dns.NewZoneParser(strings.NewReader(owner+" 0 IN "+typ+" "+rdata+"\n"), zone, "")
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil {
		if pe, isPE := err.(*dns.ParseError); isPE {
			return nil, fmt.Errorf("%s", strings.TrimPrefix(pe.Error(), "dns: "))
		}
		return nil, err
	}
	if !ok || rr == nil {
		return nil, fmt.Errorf("no value")
	}
	if _, more := zp.Next(); more {
		return nil, fmt.Errorf("more than one value")
	}
	return rr, nil
}
