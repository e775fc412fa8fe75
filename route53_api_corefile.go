package healthroute

import (
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/r53api"
	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

// corefileSets returns the record sets the Corefile defines in zone, as Route 53
// would list them: ListResourceRecordSets shows them, read-only, beside the API's.
// The zone's SOA and apex NS (the soa and ns properties) come first. Members of
// azaffinity record sets, which Route 53's API cannot express, are left out.
func corefileSets(cfg *blockConfig, zone string) []route53.ResourceRecordSet {
	ttl := int64(cfg.TTL)
	rr := routing.SOA(zone, cfg.TTL, &cfg.SOA, cfg.NS)
	out := []route53.ResourceRecordSet{{Name: zone, Type: "SOA", TTL: &ttl,
		ResourceRecords: []route53.ResourceRecord{{Value: strings.TrimPrefix(rr.String(), rr.Header().String())}}}}
	if len(cfg.NS) > 0 {
		ns := route53.ResourceRecordSet{Name: zone, Type: "NS", TTL: &ttl}
		for _, n := range cfg.NS {
			ns.ResourceRecords = append(ns.ResourceRecords, route53.ResourceRecord{Value: n})
		}
		out = append(out, ns)
	}
	byKey := map[string]int{} // name, type, set identifier -> index in out
	for _, rs := range cfg.Records {
		if rs.API || rs.Policy == routing.PolicyAZAffinity || !inZone(zone, rs.Name) {
			continue
		}
		for _, m := range rs.Members {
			set := memberSet(cfg, zone, rs, m)
			k := set.Name + "\x00" + set.Type + "\x00" + set.SetIdentifier
			if i, ok := byKey[k]; ok { // a simple record's second value line of one type
				out[i].ResourceRecords = append(out[i].ResourceRecords, set.ResourceRecords...)
				continue
			}
			byKey[k] = len(out)
			out = append(out, set)
		}
	}
	return out
}

// memberSet is one member of a Corefile record set as a Route 53 record set.
func memberSet(cfg *blockConfig, zone string, rs *routing.RecordSet, m *routing.Member) route53.ResourceRecordSet {
	set := route53.ResourceRecordSet{Name: strings.Replace(rs.Name, "*.", `\052.`, 1), Type: dns.TypeToString[m.Type]}
	if rs.Policy != routing.PolicySimple {
		set.SetIdentifier = m.ID
	}
	if m.Check != nil {
		set.HealthCheckId = m.Check.Name
	}
	switch m.Kind {
	case routing.KindAlias:
		if m.Type == 0 {
			set.Type = "A"
		}
		set.AliasTarget = &route53.AliasTarget{HostedZoneId: r53api.ZoneID(zone), DNSName: m.Target, EvaluateTargetHealth: m.ETH}
	default:
		ttl := int64(rs.AnswerTTL(cfg.TTL))
		set.TTL = &ttl
		for _, v := range memberValues(m) {
			set.ResourceRecords = append(set.ResourceRecords, route53.ResourceRecord{Value: v})
		}
	}
	policyFields(&set, rs.Policy, m)
	return set
}

// memberValues are a member's values in presentation format.
func memberValues(m *routing.Member) []string {
	var out []string
	switch m.Kind {
	case routing.KindA, routing.KindAAAA:
		for _, a := range m.Addrs {
			out = append(out, a.String())
		}
	case routing.KindCNAME:
		out = append(out, m.Target)
	default:
		for _, rr := range m.RRs {
			out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	return out
}

// policyFields sets the routing policy's fields of a member's record set.
func policyFields(set *route53.ResourceRecordSet, p routing.Policy, m *routing.Member) {
	switch p {
	case routing.PolicyWeighted:
		w := int64(m.Weight)
		set.Weight = &w
	case routing.PolicyFailover:
		set.Failover = map[routing.Role]string{routing.RolePrimary: "PRIMARY", routing.RoleSecondary: "SECONDARY"}[m.Role]
	case routing.PolicyMultivalue:
		t := true
		set.MultiValueAnswer = &t
	case routing.PolicyLatency:
		set.Region = m.Region
	case routing.PolicyGeolocation:
		g := &route53.GeoLocation{}
		switch {
		case m.Default:
			g.CountryCode = "*"
		case m.Geo == routing.GeoContinent:
			g.ContinentCode = m.GeoCode
		case m.Geo == routing.GeoCountry:
			g.CountryCode = m.GeoCode
		default:
			g.CountryCode, g.SubdivisionCode, _ = strings.Cut(m.GeoCode, "-")
		}
		set.GeoLocation = g
	case routing.PolicyGeoproximity:
		g := &route53.GeoProximityLocation{}
		if m.Region != "" {
			g.AWSRegion = m.Region
		} else {
			g.Coordinates = &route53.Coordinates{Latitude: strconv.FormatFloat(m.Lat, 'f', -1, 64), Longitude: strconv.FormatFloat(m.Lon, 'f', -1, 64)}
		}
		if m.Bias != 0 {
			b := int64(m.Bias)
			g.Bias = &b
		}
		set.GeoProximityLocation = g
	case routing.PolicyIPBased:
		loc := m.ID
		if m.Default {
			loc = "*"
		}
		set.CidrRoutingConfig = &route53.CidrRoutingConfig{CollectionId: "corefile", LocationName: loc}
	}
}
