package route53

import (
	"fmt"
	"strconv"
	"strings"
)

// key sets the routing field of rule id's item i on rs, by the rule's type.
func (b *tfBuild) key(rs *ResourceRecordSet, id, typ string, i int, it *tfItem) error {
	bad := func(format string, args ...any) error {
		return b.fail(id, "", "item %d: %s", i, fmt.Sprintf(format, args...))
	}
	switch typ {
	case "failover":
		rs.Failover = "PRIMARY"
		if i == 1 {
			rs.Failover = "SECONDARY"
		}
		rs.SetIdentifier = strings.ToLower(rs.Failover)
	case "geo":
		g, err := geoKey(it)
		if err != nil {
			return bad("%v", err)
		}
		rs.GeoLocation = g
	case "latency":
		if it.Region == "" {
			return bad("a latency item without a Region")
		}
		rs.Region = it.Region
	case "geoproximity":
		g := &GeoProximityLocation{}
		switch {
		case it.Region != "" && it.Latitude == "" && it.Longitude == "":
			r, ok := strings.CutPrefix(it.Region, "aws:route53:")
			if !ok {
				return bad("Region %q, expected aws:route53:REGION", it.Region)
			}
			g.AWSRegion = r
		case it.Region == "" && it.Latitude != "" && it.Longitude != "":
			g.Coordinates = &Coordinates{Latitude: string(it.Latitude), Longitude: string(it.Longitude)}
		default:
			return bad("expected a Region, or a Latitude and a Longitude")
		}
		if it.Bias != "" {
			v, err := strconv.ParseInt(string(it.Bias), 10, 64)
			if err != nil {
				return bad("Bias %s, expected a whole number", it.Bias)
			}
			g.Bias = &v
		}
		rs.GeoProximityLocation = g
	case "multivalue":
		t := true
		rs.MultiValueAnswer = &t
		if it.RuleReference != "" {
			return bad("a multivalue rule routes to endpoints only, found rule %q", it.RuleReference)
		}
	case "weighted":
		v, err := strconv.ParseInt(string(it.Weight), 10, 64)
		if err != nil {
			return bad("Weight %q, expected a whole number from 0 to 255", it.Weight)
		}
		rs.Weight = &v
	}
	return nil
}

// item sets rs's target: a rule's name as an alias (evaluating its health unless
// EvaluateTargetHealth is false), or an endpoint.
func (b *tfBuild) item(rs *ResourceRecordSet, id string, it *tfItem, path []string) error {
	switch {
	case (it.RuleReference == "") == (it.EndpointReference == ""):
		return b.fail(id, "", "an item needs one of EndpointReference and RuleReference")
	case it.RuleReference != "":
		if _, ok := b.rules[it.RuleReference]; !ok {
			return b.fail(id, "", "RuleReference %q names no rule of the document", it.RuleReference)
		}
		name, err := b.ruleName(it.RuleReference)
		if err != nil {
			return b.fail(it.RuleReference, "", "%v", err)
		}
		eth := it.EvaluateTargetHealth == nil || bool(*it.EvaluateTargetHealth)
		rs.AliasTarget = &AliasTarget{DNSName: name, EvaluateTargetHealth: eth}
		return b.rule(it.RuleReference, name, path)
	}
	ep, ok := b.eps[it.EndpointReference]
	if !ok {
		return b.fail(id, "", "EndpointReference %q names no endpoint of the document", it.EndpointReference)
	}
	return b.target(rs, it.EndpointReference, ep, it)
}

// target sets rs's values from endpoint id: a value endpoint's value with the policy
// record's TTL, or an AWS resource's DNS name as an alias outside the zone.
func (b *tfBuild) target(rs *ResourceRecordSet, id string, ep *tfEndpoint, it *tfItem) error {
	switch ep.Type {
	case "value":
		if ep.Value == "" {
			return b.fail("", id, "a value endpoint without a Value")
		}
		ttl := b.pr.TTL
		rs.TTL, rs.ResourceRecords = &ttl, []ResourceRecord{{Value: ep.Value}}
	case "cloudfront", "elastic-load-balancer", "application-load-balancer", "network-load-balancer", "elastic-beanstalk", "s3-website":
		if ep.Value == "" {
			return b.fail("", id, "a %s endpoint without a Value", ep.Type)
		}
		eth := it != nil && it.EvaluateTargetHealth != nil && bool(*it.EvaluateTargetHealth)
		rs.AliasTarget = &AliasTarget{DNSName: ep.Value, EvaluateTargetHealth: eth}
	default:
		return b.fail("", id, "Type %q: %v; expected value, cloudfront, elastic-load-balancer, application-load-balancer, network-load-balancer, elastic-beanstalk or s3-website", ep.Type, ErrUnsupported)
	}
	return nil
}

// geoKey is a geo rule item's location.
func geoKey(it *tfItem) (*GeoLocation, error) {
	g := &GeoLocation{}
	switch {
	case it.IsDefault != nil && bool(*it.IsDefault):
		if it.Continent != "" || it.Country != "" || it.Subdivision != "" {
			return nil, fmt.Errorf("IsDefault with a location")
		}
		g.CountryCode = "*"
	case it.Subdivision != "":
		cc, sub, ok := strings.Cut(it.Subdivision, "-")
		if !ok { // Country with the subdivision's own code
			cc, sub = it.Country, it.Subdivision
		} else if it.Country != "" && it.Country != cc {
			return nil, fmt.Errorf("Subdivision %s is not in Country %s", it.Subdivision, it.Country)
		}
		if cc == "" {
			return nil, fmt.Errorf("Subdivision %s without its country (expected such as US-WA)", it.Subdivision)
		}
		g.CountryCode, g.SubdivisionCode = cc, sub
	case it.Country != "" && it.Continent == "":
		g.CountryCode = it.Country
	case it.Continent != "" && it.Country == "":
		g.ContinentCode = it.Continent
	default:
		return nil, fmt.Errorf("expected IsDefault, a Continent, a Country or a Subdivision")
	}
	return g, nil
}
