package route53

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// member is one converted record set: a member line of a record block.
type member struct {
	rs      *ResourceRecordSet
	idx     int    // position in the input
	name    string // owner, normalized
	typ     string // record type, upper case
	policy  string // healthroute policy
	key     string // policy key, "" for simple
	target  string // target text, with its values
	aliasTo string // an in-zone alias's target, normalized
	ttl     int64  // -1 for aliases
	opts    string // evaluate_target_health, check and id, with a leading space
}

func (m *member) line(typed bool) string {
	t := m.target
	if typed && m.aliasTo != "" {
		t += " " + m.typ
	}
	if m.key == "" {
		return t + m.opts
	}
	return m.key + " " + t + m.opts
}

// group is the record sets of one name and type.
type group struct {
	typ     string
	policy  string
	ttl     int64 // -1: aliases only
	members []*member
}

// converter holds the state of one Convert.
type converter struct {
	in      Input
	zone    string
	regions []string                     // used, in first-use order
	checks  map[string]*HealthCheck      // by ID
	used    map[string]bool              // checks to emit
	byName  map[string][]*group          // groups by owner, types in input order
	names   []string                     // owners in input order
	cidrs   map[[2]string][]netip.Prefix // (collection, location) -> blocks
	warn    []string
	tf      policyState // traffic flow: the policy records' record sets
}

// Convert turns a hosted zone into healthroute Corefile text. Record sets of one name
// share one record block when every type there has the same policy and TTL, the
// set identifiers are distinct across types, and each alias member appears in every
// type its target serves (as Route 53 writes dual-stack aliases); otherwise each type
// gets its own block, and alias members name their type (`alias NAME TYPE`). The
// zone's SOA and apex NS record sets are left out (healthroute answers for the zone
// itself). Anything that cannot be reproduced is an *Error naming the record set, and
// no text is returned.
func Convert(in Input) (*Result, error) {
	c := &converter{in: in, checks: map[string]*HealthCheck{}, used: map[string]bool{},
		byName: map[string][]*group{}, cidrs: map[[2]string][]netip.Prefix{}}
	if err := c.findZone(); err != nil {
		return nil, err
	}
	for i := range in.HealthChecks {
		hc := &in.HealthChecks[i]
		if _, dup := c.checks[hc.Id]; dup {
			return nil, fmt.Errorf("health check %s: listed twice", hc.Id)
		}
		c.checks[hc.Id] = hc
	}
	for id, blocks := range in.CIDRBlocks {
		for _, b := range blocks {
			p, err := netip.ParsePrefix(b.CidrBlock)
			if longest := map[bool]int{true: 24, false: 48}[p.Addr().Is4()]; err != nil || p.Bits() < 1 || p.Bits() > longest {
				return nil, fmt.Errorf("cidr block %q of location %s: expected an IPv4 prefix of /1 to /24 or an IPv6 prefix of /1 to /48", b.CidrBlock, b.LocationName)
			}
			k := [2]string{id, b.LocationName}
			c.cidrs[k] = append(c.cidrs[k], p.Masked())
		}
	}
	if err := c.readPolicyRecords(); err != nil {
		return nil, err
	}
	var skipped []string
	for i := range in.RecordSets {
		rs := &in.RecordSets[i]
		if c.madeByPolicyRecord(rs) {
			continue
		}
		m, err := c.member(rs, i)
		if err != nil {
			return nil, err
		}
		if m == nil {
			skipped = append(skipped, rs.Type)
			continue
		}
		if err := c.add(m); err != nil {
			return nil, err
		}
	}
	if len(skipped) > 0 {
		c.warnf("left out the zone's %s record sets: healthroute makes the SOA of %s itself, and does not serve the apex NS records", strings.Join(skipped, " and "), c.zone)
	}
	if err := c.addPolicyRecords(); err != nil {
		return nil, err
	}
	if err := c.checkAliases(); err != nil {
		return nil, c.policyErr(err)
	}
	if err := c.cnameThroughAliases(); err != nil {
		return nil, c.policyErr(err)
	}
	var b strings.Builder
	for _, r := range c.regions {
		ll := regionCoords[r]
		fmt.Fprintf(&b, "region %s %s %s\n", r, ftoa(ll[0]), ftoa(ll[1]))
	}
	if err := c.writeChecks(&b); err != nil {
		return nil, err
	}
	if err := c.writeRecords(&b); err != nil {
		return nil, c.policyErr(err) // a CNAME that must be alone: name the rule
	}
	return &Result{Zone: c.zone, Corefile: b.String(), Warnings: c.warn}, nil
}

func (c *converter) warnf(format string, args ...any) {
	c.warn = append(c.warn, fmt.Sprintf(format, args...))
}

func (c *converter) findZone() error {
	z := c.in.Zone
	if z == "" {
		for i := range c.in.RecordSets {
			if strings.EqualFold(c.in.RecordSets[i].Type, "SOA") {
				z = c.in.RecordSets[i].Name
				break
			}
		}
		if z == "" {
			return fmt.Errorf("no zone given and no SOA record set to take it from")
		}
	}
	n, err := normName(z)
	if err != nil {
		return fmt.Errorf("zone %q: %v", z, err)
	}
	c.zone = n
	return nil
}

// normName decodes Route 53's octal escapes (\052 is '*'), lower-cases and
// fully qualifies a name.
func normName(s string) (string, error) {
	s = strings.TrimSpace(s) // the API's own examples carry a trailing blank
	if strings.Contains(s, `\`) {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
				n, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
				b.WriteByte(byte(n))
				i += 3
				continue
			}
			b.WriteByte(s[i])
		}
		s = b.String()
	}
	s = strings.ToLower(dns.Fqdn(s))
	if _, ok := dns.IsDomainName(s); !ok || strings.ContainsAny(s, " \t\"#{}\\") {
		return "", fmt.Errorf("invalid name %q", s)
	}
	if i := strings.IndexByte(s, '*'); i >= 0 && (i != 0 || !strings.HasPrefix(s, "*.") || strings.Count(s, "*") > 1) {
		return "", fmt.Errorf("invalid name %q: '*' is allowed only as the whole first label", s)
	}
	return s, nil
}

func isOctal(b byte) bool { return b >= '0' && b <= '7' }

// inZone reports whether n is the zone or below it.
func (c *converter) inZone(n string) bool {
	return n == c.zone || strings.HasSuffix(n, "."+c.zone) || c.zone == "."
}

// policyOf returns the healthroute policy a record set's routing fields select.
func policyOf(rs *ResourceRecordSet) ([]string, string) {
	var p []string
	if rs.Weight != nil {
		p = append(p, "weighted")
	}
	if rs.Failover != "" {
		p = append(p, "failover")
	}
	if rs.Region != "" {
		p = append(p, "latency")
	}
	if rs.GeoLocation != nil {
		p = append(p, "geolocation")
	}
	if rs.GeoProximityLocation != nil {
		p = append(p, "geoproximity")
	}
	if rs.CidrRoutingConfig != nil {
		p = append(p, "ip")
	}
	if rs.MultiValueAnswer != nil && *rs.MultiValueAnswer {
		p = append(p, "multivalue")
	}
	if rs.AZAffinity != nil {
		p = append(p, "azaffinity")
	}
	if len(p) == 0 {
		return p, "simple"
	}
	return p, p[0]
}

// member converts one record set; nil for the zone's own SOA and NS.
func (c *converter) member(rs *ResourceRecordSet, i int) (*member, error) {
	fail := func(format string, args ...any) (*member, error) { return nil, rsErr(rs, i, format, args...) }
	name, err := normName(rs.Name)
	if err != nil {
		return fail("%v", err)
	}
	if !c.inZone(name) {
		return fail("name is not within the zone %s", c.zone)
	}
	typ := strings.ToUpper(rs.Type)
	if typ == "SOA" || (typ == "NS" && name == c.zone) {
		if name != c.zone {
			return fail("SOA below the zone apex")
		}
		return nil, nil
	}
	if _, ok := fieldCount[typ]; !ok {
		return fail("type %q: %w; expected A, AAAA, CNAME, MX, TXT, SPF, SRV, CAA, NS, PTR, NAPTR or DS", rs.Type, ErrUnsupported)
	}
	if rs.TrafficPolicyInstanceId != "" {
		return fail("created by traffic policy instance %s: traffic policies are %w; export the record sets the policy created instead", rs.TrafficPolicyInstanceId, ErrUnsupported)
	}
	all, policy := policyOf(rs)
	if len(all) > 1 {
		return fail("routing policies %s at once; a record set has one", strings.Join(all, " and "))
	}
	if policy == "simple" && rs.SetIdentifier != "" {
		return fail("SetIdentifier without a routing policy")
	}
	if policy != "simple" && rs.SetIdentifier == "" {
		return fail("%s record set without a SetIdentifier", policy)
	}
	if policy == "simple" && rs.HealthCheckId != "" {
		// Route 53 refuses this too: a simple record set has nothing to fail over to.
		return fail("health check on a record set without a routing policy")
	}
	if policy == "multivalue" && (rs.AliasTarget != nil || typ == "NS" || typ == "CNAME") {
		return fail("a multivalue record set cannot be an alias, a CNAME or an NS record set")
	}
	m := &member{rs: rs, idx: i, name: name, typ: typ, policy: policy, ttl: -1}
	if m.key, err = c.policyKey(rs, policy); err != nil {
		return fail("%v", err)
	}
	if err := c.target(m); err != nil {
		return fail("%v", err)
	}
	var o strings.Builder
	if a := rs.AliasTarget; a != nil && m.aliasTo != "" {
		if a.EvaluateTargetHealth {
			o.WriteString(" evaluate_target_health")
		} else {
			o.WriteString(" evaluate_target_health no")
		}
	}
	if rs.HealthCheckId != "" {
		if _, ok := c.checks[rs.HealthCheckId]; !ok {
			return fail("health check %s is not among the health checks read", rs.HealthCheckId)
		}
		c.use(rs.HealthCheckId)
		o.WriteString(" check " + rs.HealthCheckId)
	}
	if rs.SetIdentifier != "" {
		id, err := token(rs.SetIdentifier)
		if err != nil {
			return fail("SetIdentifier: %v", err)
		}
		o.WriteString(" id " + id)
	}
	m.opts = o.String()
	return m, nil
}

// policyKey returns the member key of a record set's routing policy.
func (c *converter) policyKey(rs *ResourceRecordSet, policy string) (string, error) {
	switch policy {
	case "weighted":
		if *rs.Weight < 0 || *rs.Weight > 255 {
			return "", fmt.Errorf("Weight %d, expected 0 to 255", *rs.Weight)
		}
		return "weight " + strconv.FormatInt(*rs.Weight, 10), nil
	case "failover":
		switch rs.Failover {
		case "PRIMARY":
			return "primary", nil
		case "SECONDARY":
			return "secondary", nil
		}
		return "", fmt.Errorf("Failover %q, expected PRIMARY or SECONDARY", rs.Failover)
	case "latency":
		if err := c.region(rs.Region); err != nil {
			return "", err
		}
		return "region " + rs.Region, nil
	case "geolocation":
		g := rs.GeoLocation
		if !code(g.ContinentCode, 2) || (!code(g.CountryCode, 2) && g.CountryCode != "*") || !code(g.SubdivisionCode, 3) {
			return "", fmt.Errorf("GeoLocation %+v: expected letter and digit codes (continent and country 2, subdivision up to 3)", *g)
		}
		switch {
		case g.CountryCode == "*" && g.ContinentCode == "" && g.SubdivisionCode == "":
			return "default", nil
		case g.SubdivisionCode != "" && g.CountryCode != "" && g.ContinentCode == "":
			return "subdivision " + g.CountryCode + "-" + g.SubdivisionCode, nil
		case g.CountryCode != "" && g.ContinentCode == "" && g.SubdivisionCode == "":
			return "country " + g.CountryCode, nil
		case g.ContinentCode != "" && g.CountryCode == "" && g.SubdivisionCode == "":
			return "continent " + g.ContinentCode, nil
		}
		return "", fmt.Errorf("GeoLocation %+v, expected a ContinentCode, a CountryCode (\"*\" for the default) or a CountryCode with a SubdivisionCode", *g)
	case "geoproximity":
		return c.proximityKey(rs.GeoProximityLocation)
	case "ip":
		cr := rs.CidrRoutingConfig
		if cr.LocationName == "*" {
			return "default", nil
		}
		blocks, ok := c.cidrs[[2]string{cr.CollectionId, cr.LocationName}]
		if !ok && c.in.CIDRBlocks[cr.CollectionId] == nil {
			blocks = c.cidrs[[2]string{"", cr.LocationName}]
		}
		if len(blocks) == 0 {
			return "", fmt.Errorf("CIDR location %q of collection %s has no blocks in the CIDR blocks read (aws route53 list-cidr-blocks --collection-id %s)", cr.LocationName, cr.CollectionId, cr.CollectionId)
		}
		s := make([]string, len(blocks))
		for i, p := range blocks {
			s[i] = p.String()
		}
		return "cidr " + strings.Join(s, ","), nil
	case "multivalue":
		return "value", nil
	case "azaffinity":
		return azAffinityKey(rs.AZAffinity)
	}
	return "", nil
}

// code reports whether s is empty or a code of at most n letters and digits.
func code(s string, n int) bool {
	if len(s) > n {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func (c *converter) proximityKey(g *GeoProximityLocation) (string, error) {
	var key string
	switch {
	case g.LocalZoneGroup != "":
		return "", fmt.Errorf("GeoProximityLocation LocalZoneGroup %s: Local Zones are %w (their coordinates are not known here); use Coordinates", g.LocalZoneGroup, ErrUnsupported)
	case g.AWSRegion != "" && g.Coordinates == nil:
		if err := c.region(g.AWSRegion); err != nil {
			return "", err
		}
		key = "region " + g.AWSRegion
	case g.Coordinates != nil && g.AWSRegion == "":
		lat, err1 := strconv.ParseFloat(g.Coordinates.Latitude, 64)
		lon, err2 := strconv.ParseFloat(g.Coordinates.Longitude, 64)
		if err1 != nil || err2 != nil || !(math.Abs(lat) <= 90 && math.Abs(lon) <= 180) { // NaN too
			return "", fmt.Errorf("GeoProximityLocation Coordinates %q %q, expected a latitude (-90 to 90) and a longitude (-180 to 180)", g.Coordinates.Latitude, g.Coordinates.Longitude)
		}
		key = "coordinates " + ftoa(lat) + " " + ftoa(lon)
	default:
		return "", fmt.Errorf("GeoProximityLocation needs one of AWSRegion or Coordinates")
	}
	if g.Bias != nil && *g.Bias != 0 {
		if *g.Bias < -99 || *g.Bias > 99 {
			return "", fmt.Errorf("GeoProximityLocation Bias %d, expected -99 to 99", *g.Bias)
		}
		key += " bias " + strconv.FormatInt(*g.Bias, 10)
	}
	return key, nil
}

// region records that region r is used, for its `region` line.
func (c *converter) region(r string) error {
	if _, ok := regionCoords[r]; !ok {
		return fmt.Errorf("region %q: not an AWS region this importer knows the location of", r)
	}
	if !slices.Contains(c.regions, r) {
		c.regions = append(c.regions, r)
	}
	return nil
}

// target sets a member's target text (and ttl) from its values or alias.
func (c *converter) target(m *member) error {
	rs := m.rs
	if a := rs.AliasTarget; a != nil {
		if len(rs.ResourceRecords) > 0 || rs.TTL != nil {
			return fmt.Errorf("AliasTarget with ResourceRecords or TTL; an alias has neither")
		}
		t, err := normName(a.DNSName)
		if err != nil {
			return fmt.Errorf("AliasTarget: %v", err)
		}
		switch m.typ {
		case "A", "AAAA", "CNAME", "MX", "TXT", "SPF", "SRV", "CAA", "PTR", "NAPTR":
		default:
			return fmt.Errorf("alias of type %s: Route 53 has no such alias", m.typ)
		}
		if c.inZone(t) {
			m.target, m.aliasTo = "alias "+t, t
			return nil
		}
		if m.typ != "A" && m.typ != "AAAA" && m.typ != "CNAME" {
			return fmt.Errorf("alias to %s outside the zone for type %s: %w (healthroute answers such aliases with a CNAME)", t, m.typ, ErrUnsupported)
		}
		eth := ""
		if a.EvaluateTargetHealth {
			eth = "; its EvaluateTargetHealth is not honoured (the member is always healthy unless it has a health check)"
		}
		c.warnf("record set %s %s%s: alias to %s, outside the zone, is answered with a CNAME to it, not with its addresses%s", m.name, m.typ, setID(rs), t, eth)
		m.target = "CNAME " + t
		return nil
	}
	if rs.TTL == nil {
		return fmt.Errorf("no TTL; a record set without an AliasTarget needs one")
	}
	if *rs.TTL < 0 || *rs.TTL > math.MaxInt32 {
		return fmt.Errorf("TTL %d, expected 0 to %d", *rs.TTL, math.MaxInt32)
	}
	m.ttl = *rs.TTL
	if len(rs.ResourceRecords) == 0 {
		return fmt.Errorf("no ResourceRecords and no AliasTarget")
	}
	if m.typ == "CNAME" && len(rs.ResourceRecords) > 1 {
		return fmt.Errorf("a CNAME record set has one value, found %d", len(rs.ResourceRecords))
	}
	vals := make([]string, 0, len(rs.ResourceRecords))
	for _, v := range rs.ResourceRecords {
		s, err := value(m.typ, v.Value)
		if err != nil {
			return err
		}
		vals = append(vals, s)
	}
	m.target = m.typ + " " + strings.Join(vals, " ")
	return nil
}

func setID(rs *ResourceRecordSet) string {
	if rs.SetIdentifier == "" {
		return ""
	}
	return " (" + strconv.Quote(rs.SetIdentifier) + ")"
}

// add files a member under its name and type, checking what Route 53 requires of
// the record sets of one name and type.
func (c *converter) add(m *member) error {
	gs, seen := c.byName[m.name]
	if !seen {
		c.names = append(c.names, m.name)
	}
	var g *group
	for _, x := range gs {
		if x.typ == m.typ {
			g = x
		}
	}
	if g == nil {
		g = &group{typ: m.typ, policy: m.policy, ttl: -1}
		c.byName[m.name] = append(gs, g)
	}
	switch {
	case g.policy != m.policy:
		return rsErr(m.rs, m.idx, "routing policy %s, but the record set%s of the same name and type is %s; one name and type has one policy", m.policy, setID(g.members[0].rs), g.policy)
	case m.policy == "simple" && len(g.members) > 0:
		return rsErr(m.rs, m.idx, "a second record set without a routing policy at this name and type")
	case g.ttl >= 0 && m.ttl >= 0 && g.ttl != m.ttl:
		return rsErr(m.rs, m.idx, "TTL %d, but the other record sets of this name and type have %d; Route 53 keeps one TTL per name and type", m.ttl, g.ttl)
	}
	for _, o := range g.members {
		if o.rs.SetIdentifier == m.rs.SetIdentifier {
			return rsErr(m.rs, m.idx, "SetIdentifier used twice at this name and type")
		}
	}
	if m.ttl >= 0 {
		g.ttl = m.ttl
	}
	g.members = append(g.members, m)
	return nil
}

// checkAliases refuses in-zone aliases whose target has no record set of the
// alias's type, as Route 53 does.
func (c *converter) checkAliases() error {
	for _, n := range c.names {
		for _, g := range c.byName[n] {
			for _, m := range g.members {
				if m.aliasTo == "" {
					continue
				}
				if !slices.ContainsFunc(c.byName[m.aliasTo], func(t *group) bool { return t.typ == g.typ }) {
					return rsErr(m.rs, m.idx, "alias to %s, which has no %s record set in the zone", m.aliasTo, g.typ)
				}
			}
		}
	}
	return nil
}

// writeRecords writes one record block per name, or per name and type where the
// types cannot share one.
func (c *converter) writeRecords(b *strings.Builder) error {
	served := c.servedTypes()
	memo := map[string]int{}
	for _, n := range c.names {
		gs := c.byName[n]
		if err := c.cnameAlone(gs, memo); err != nil {
			return err
		}
		if lines, ttl, ok := c.merge(gs, served); ok {
			c.leaks(n, gs, served)
			writeBlock(b, n, gs[0].policy, ttl, lines, c.in.BlockTTL)
			continue
		}
		for _, g := range gs {
			lines := make([]string, len(g.members))
			for i, m := range g.members {
				lines[i] = m.line(true)
			}
			writeBlock(b, n, g.policy, g.ttl, lines, c.in.BlockTTL)
		}
	}
	return nil
}

// cnameAlone refuses a CNAME member (a CNAME record set, or an alias answered with
// a CNAME) that would share its name with other records: the answer would be invalid
// DNS, and healthroute refuses it. An in-zone alias counts as what its target
// answers, following aliases: beside an alias to a rule whose endpoints are all
// answered with CNAMEs (AWS resources), a CNAME is not mixed with anything.
func (c *converter) cnameAlone(gs []*group, memo map[string]int) error {
	var cname, other *member
	for _, g := range gs {
		for _, m := range g.members {
			if m.aliasTo != "" && c.answerKinds(m.aliasTo, memo) == kindCNAME || m.aliasTo == "" && strings.HasPrefix(m.target, "CNAME ") {
				if cname == nil {
					cname = m
				}
			} else if other == nil {
				other = m
			}
		}
	}
	if cname == nil || other == nil {
		return nil
	}
	what := "its CNAME"
	if cname.rs.AliasTarget != nil {
		what = "the CNAME that answers its alias"
	}
	return rsErr(cname.rs, cname.idx, "%s would share the name with the %s record set%s; a CNAME must be alone at its name (give the alias an in-zone target, or A/AAAA values)", what, other.typ, setID(other.rs))
}

func writeBlock(b *strings.Builder, name, policy string, ttl int64, lines []string, blockTTL bool) {
	fmt.Fprintf(b, "record %s %s {\n", name, policy)
	if ttl >= 0 && !blockTTL {
		fmt.Fprintf(b, "    ttl %d\n", ttl)
	}
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	b.WriteString("}\n")
}

// servedTypes maps each name to the types its record sets have.
func (c *converter) servedTypes() map[string][]string {
	s := make(map[string][]string, len(c.names))
	for _, n := range c.names {
		for _, g := range c.byName[n] {
			s[n] = append(s[n], g.typ)
		}
	}
	return s
}

// merge returns the member lines of one block holding every type of a name, or
// false when the types cannot share a block without changing an answer.
func (c *converter) merge(gs []*group, served map[string][]string) ([]string, int64, bool) {
	if len(gs) == 1 {
		lines := make([]string, len(gs[0].members))
		for i, m := range gs[0].members {
			lines[i] = m.line(false)
		}
		return lines, gs[0].ttl, true
	}
	ttl := int64(-1)
	var lines []string
	ids := map[string]string{} // set identifier -> line
	for _, g := range gs {
		if g.policy != gs[0].policy || (g.ttl >= 0 && ttl >= 0 && g.ttl != ttl) {
			return nil, 0, false
		}
		if g.ttl >= 0 {
			ttl = g.ttl
		}
		for _, m := range g.members {
			l := m.line(false)
			// An untyped alias or CNAME line serves every type its target has: it
			// must stand in each of them, once.
			if m.aliasTo != "" {
				for _, t := range served[m.aliasTo] {
					if hasGroup(gs, t) && !groupHas(gs, t, l) {
						return nil, 0, false
					}
				}
			}
			if strings.HasPrefix(m.target, "CNAME ") {
				for _, o := range gs {
					if !groupHas(gs, o.typ, l) {
						return nil, 0, false
					}
				}
			}
			if prev, ok := ids[m.rs.SetIdentifier]; ok && m.policy != "simple" {
				if prev != l {
					return nil, 0, false
				}
				continue
			}
			if slices.Contains(lines, l) {
				continue
			}
			ids[m.rs.SetIdentifier] = l
			lines = append(lines, l)
		}
	}
	return lines, ttl, true
}

func hasGroup(gs []*group, typ string) bool {
	return slices.ContainsFunc(gs, func(g *group) bool { return g.typ == typ })
}

func groupHas(gs []*group, typ, line string) bool {
	for _, g := range gs {
		if g.typ == typ {
			return slices.ContainsFunc(g.members, func(m *member) bool { return m.line(false) == line })
		}
	}
	return false
}

// leaks warns where an untyped alias answers a type Route 53's alias would not:
// healthroute's alias follows every type its target serves.
func (c *converter) leaks(n string, gs []*group, served map[string][]string) {
	for _, g := range gs {
		for _, m := range g.members {
			if m.aliasTo == "" {
				continue
			}
			for _, t := range served[m.aliasTo] {
				if !hasGroup(gs, t) {
					c.warnf("record set %s %s%s: alias to %s also answers %s queries for %s, as healthroute aliases follow every type of their target; Route 53 answers them NODATA", n, g.typ, setID(m.rs), m.aliasTo, t, n)
				}
			}
		}
	}
}
