package route53

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// key sets the routing field of rule id's item i on rs, by the rule's type.
func (b *tfBuild) key(rs *ResourceRecordSet, id, typ string, i int, it *tfItem) error {
	bad := func(format string, args ...any) error {
		return b.fail(id, "", "item %d: %s", i, fmt.Sprintf(format, args...))
	}
	if f := foreignField(typ, it); f != "" {
		return bad("%s is not a field of a %s rule's items", f, typ)
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
		g, err := proximityLocation(it)
		if err != nil {
			return b.fail(id, "", "item %d: %w", i, err)
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
		host := ep.Value
		if ep.Type == "s3-website" {
			var err error
			if host, err = s3WebsiteHost(ep); err != nil {
				return b.fail("", id, "%v", err)
			}
		}
		eth := it != nil && it.EvaluateTargetHealth != nil && bool(*it.EvaluateTargetHealth)
		rs.AliasTarget = &AliasTarget{DNSName: host, EvaluateTargetHealth: eth}
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
		if it.Continent != "" || (it.Country != "" && it.Country != "*") || it.Subdivision != "" {
			return nil, fmt.Errorf("IsDefault with a location other than Country *")
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

// proximityLocation is a geoproximity item's location: in the 2015-10-01 format a
// Region (aws:route53:REGION) or a Latitude and a Longitude, in the 2023-05-09 format
// a Location of Type Region, LocalZone or Coordinate. Either format's fields are read
// in a document of either version.
func proximityLocation(it *tfItem) (*GeoProximityLocation, error) {
	g := &GeoProximityLocation{}
	region, lat, lon := it.Region, it.Latitude, it.Longitude
	if p := it.Location; p != nil {
		if region != "" || lat != "" || lon != "" {
			return nil, fmt.Errorf("Location with Region, Latitude or Longitude beside it, expected one of them")
		}
		switch p.Type {
		case "Region":
			if p.Latitude != "" || p.Longitude != "" || p.LocationName == "" {
				return nil, fmt.Errorf("a Location of Type Region takes a LocationName (aws:route53:REGION) only")
			}
			region = p.LocationName
		case "Coordinate":
			if p.LocationName != "" || p.Latitude == "" || p.Longitude == "" {
				return nil, fmt.Errorf("a Location of Type Coordinate takes a Latitude and a Longitude only")
			}
			lat, lon = p.Latitude, p.Longitude
		case "LocalZone":
			return nil, fmt.Errorf("Location LocalZone %s: Local Zones are %w (their coordinates are not known here); use a Coordinate location", p.LocationName, ErrUnsupported)
		default:
			return nil, fmt.Errorf("Location Type %q, expected Region, LocalZone or Coordinate", p.Type)
		}
	}
	switch {
	case region != "" && lat == "" && lon == "":
		r, ok := strings.CutPrefix(region, "aws:route53:")
		if !ok || r == "" {
			return nil, fmt.Errorf("Region %q, expected aws:route53:REGION", region)
		}
		g.AWSRegion = r
	case region == "" && lat != "" && lon != "":
		g.Coordinates = &Coordinates{Latitude: string(lat), Longitude: string(lon)}
	default:
		return nil, fmt.Errorf("expected a Region, or a Latitude and a Longitude")
	}
	if it.Bias != "" {
		v, err := strconv.ParseInt(string(it.Bias), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("Bias %s, expected a whole number", it.Bias)
		}
		g.Bias = &v
	}
	return g, nil
}

// foreignField names a field of item it that rules of type typ do not take, "" when
// there is none: such a field would be read by Route 53 differently or not at all.
func foreignField(typ string, it *tfItem) string {
	set := []struct {
		name  string
		isSet bool
		types string
	}{
		{"IsDefault", it.IsDefault != nil, "geo"},
		{"Continent", it.Continent != "", "geo"},
		{"Country", it.Country != "", "geo"},
		{"Subdivision", it.Subdivision != "", "geo"},
		{"Region", it.Region != "", "latency geoproximity"},
		{"Latitude", it.Latitude != "", "geoproximity"},
		{"Longitude", it.Longitude != "", "geoproximity"},
		{"Location", it.Location != nil, "geoproximity"},
		{"Bias", it.Bias != "", "geoproximity"},
		{"Weight", it.Weight != "", "weighted"},
		{"EvaluateTargetHealth", it.EvaluateTargetHealth != nil, "failover geo latency geoproximity weighted"},
	}
	for _, f := range set {
		if f.isSet && !slices.Contains(strings.Fields(f.types), typ) {
			return f.name
		}
	}
	return ""
}

// dashWebsiteRegions are the regions whose S3 website endpoints are written
// s3-website-REGION; the others' are s3-website.REGION.
var dashWebsiteRegions = map[string]bool{"us-east-1": true, "us-west-1": true, "us-west-2": true, "ap-southeast-1": true,
	"ap-southeast-2": true, "ap-northeast-1": true, "eu-west-1": true, "sa-east-1": true, "us-gov-west-1": true}

// s3WebsiteHost is the website endpoint of an s3-website endpoint: its Value when that
// is the endpoint already (BUCKET.s3-website-us-east-1.amazonaws.com), else the
// bucket named by Value in the endpoint's Region.
func s3WebsiteHost(ep *tfEndpoint) (string, error) {
	v := strings.TrimSuffix(ep.Value, ".")
	if strings.Contains(v, ".s3-website") {
		return v, nil
	}
	if ep.Region == "" || !isRegionCode(ep.Region) {
		return "", fmt.Errorf("an s3-website endpoint naming the bucket %s needs the bucket's Region (such as us-east-1), found %q", v, ep.Region)
	}
	sep, suffix := ".", ".amazonaws.com"
	if dashWebsiteRegions[ep.Region] {
		sep = "-"
	}
	if strings.HasPrefix(ep.Region, "cn-") {
		suffix += ".cn"
	}
	return v + ".s3-website" + sep + ep.Region + suffix, nil
}

// isRegionCode reports whether s is written as a region code: lower-case letters and
// dashes, then a dash and a number.
func isRegionCode(s string) bool {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 || i == len(s)-1 {
		return false
	}
	for _, r := range s[i+1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	for _, r := range s[:i] {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}
