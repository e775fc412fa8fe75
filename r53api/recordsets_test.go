package r53api

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// TestEveryPolicyAndTypeTheImporterAccepts creates, through the SDK, record sets
// of every routing policy and of several types, an alias with
// evaluate-target-health, and string-match and calculated health checks: all
// are accepted in one batch and listed back as they were sent.
func TestEveryPolicyAndTypeTheImporterAccepts(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	str, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("s"), HealthCheckConfig: &types.HealthCheckConfig{
		Type: types.HealthCheckTypeHttpsStrMatch, FullyQualifiedDomainName: aws.String("app.example.net"), Port: aws.Int32(8443),
		ResourcePath: aws.String("/status"), SearchString: aws.String("ok"), Regions: []types.HealthCheckRegion{types.HealthCheckRegionUsEast1, types.HealthCheckRegionEuWest1, types.HealthCheckRegionApSoutheast1}}})
	if err != nil {
		t.Fatal(err)
	}
	calc, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("c"), HealthCheckConfig: &types.HealthCheckConfig{
		Type: types.HealthCheckTypeCalculated, HealthThreshold: aws.Int32(1), ChildHealthChecks: []string{aws.ToString(str.HealthCheck.Id)}}})
	if err != nil {
		t.Fatal(err)
	}
	rr := func(v ...string) []types.ResourceRecord {
		var out []types.ResourceRecord
		for _, x := range v {
			out = append(out, types.ResourceRecord{Value: aws.String(x)})
		}
		return out
	}
	sets := []types.ResourceRecordSet{
		{Name: aws.String("lat.example.org."), Type: types.RRTypeA, SetIdentifier: aws.String("use1"), Region: types.ResourceRecordSetRegionUsEast1, TTL: aws.Int64(60), ResourceRecords: rr("192.0.2.1"), HealthCheckId: calc.HealthCheck.Id},
		{Name: aws.String("lat.example.org."), Type: types.RRTypeA, SetIdentifier: aws.String("euw1"), Region: types.ResourceRecordSetRegionEuWest1, TTL: aws.Int64(60), ResourceRecords: rr("192.0.2.2")},
		{Name: aws.String("geo.example.org."), Type: types.RRTypeAaaa, SetIdentifier: aws.String("de"), GeoLocation: &types.GeoLocation{CountryCode: aws.String("DE")}, TTL: aws.Int64(60), ResourceRecords: rr("2001:db8::1")},
		{Name: aws.String("geo.example.org."), Type: types.RRTypeAaaa, SetIdentifier: aws.String("default"), GeoLocation: &types.GeoLocation{CountryCode: aws.String("*")}, TTL: aws.Int64(60), ResourceRecords: rr("2001:db8::2")},
		{Name: aws.String("mv.example.org."), Type: types.RRTypeA, SetIdentifier: aws.String("m1"), MultiValueAnswer: aws.Bool(true), TTL: aws.Int64(60), ResourceRecords: rr("192.0.2.10"), HealthCheckId: str.HealthCheck.Id},
		{Name: aws.String("mv.example.org."), Type: types.RRTypeA, SetIdentifier: aws.String("m2"), MultiValueAnswer: aws.Bool(true), TTL: aws.Int64(60), ResourceRecords: rr("192.0.2.11")},
		{Name: aws.String("prox.example.org."), Type: types.RRTypeA, SetIdentifier: aws.String("p1"), GeoProximityLocation: &types.GeoProximityLocation{AWSRegion: aws.String("us-east-1"), Bias: aws.Int32(10)}, TTL: aws.Int64(60), ResourceRecords: rr("192.0.2.20")},
		{Name: aws.String("prox.example.org."), Type: types.RRTypeA, SetIdentifier: aws.String("p2"), GeoProximityLocation: &types.GeoProximityLocation{Coordinates: &types.Coordinates{Latitude: aws.String("48.86"), Longitude: aws.String("2.35")}}, TTL: aws.Int64(60), ResourceRecords: rr("192.0.2.21")},
		{Name: aws.String("www.example.org."), Type: types.RRTypeA, AliasTarget: &types.AliasTarget{HostedZoneId: aws.String(ZoneID("example.org.")), DNSName: aws.String("lat.example.org."), EvaluateTargetHealth: true}},
		{Name: aws.String("example.org."), Type: types.RRTypeMx, TTL: aws.Int64(300), ResourceRecords: rr("10 mx1.example.net.", "20 mx2.example.net.")},
		{Name: aws.String("example.org."), Type: types.RRTypeTxt, TTL: aws.Int64(300), ResourceRecords: rr(`"v=spf1 -all"`)},
		{Name: aws.String("_sip._tcp.example.org."), Type: types.RRTypeSrv, TTL: aws.Int64(300), ResourceRecords: rr("1 1 5060 sip.example.net.")},
		{Name: aws.String("example.org."), Type: types.RRTypeCaa, TTL: aws.Int64(300), ResourceRecords: rr(`0 issue "ca.example.net"`)},
		{Name: aws.String("alias-target.example.org."), Type: types.RRTypeCname, TTL: aws.Int64(300), ResourceRecords: rr("elsewhere.example.net.")},
	}
	var changes []types.Change
	for i := range sets {
		changes = append(changes, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: &sets[i]})
	}
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org.")),
		ChangeBatch: &types.ChangeBatch{Changes: changes}}); err != nil {
		t.Fatalf("a batch of every policy: %v", err)
	}
	list, err := c.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org."))})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.ResourceRecordSets) != len(sets) {
		t.Fatalf("listed %d record sets, want %d", len(list.ResourceRecordSets), len(sets))
	}
	byKey := map[string]types.ResourceRecordSet{}
	for _, rs := range list.ResourceRecordSets {
		byKey[aws.ToString(rs.Name)+string(rs.Type)+aws.ToString(rs.SetIdentifier)] = rs
	}
	for _, want := range sets {
		got, ok := byKey[aws.ToString(want.Name)+string(want.Type)+aws.ToString(want.SetIdentifier)]
		switch {
		case !ok:
			t.Errorf("%s %s %s not listed", aws.ToString(want.Name), want.Type, aws.ToString(want.SetIdentifier))
		case got.Region != want.Region || aws.ToString(got.HealthCheckId) != aws.ToString(want.HealthCheckId) || len(got.ResourceRecords) != len(want.ResourceRecords) ||
			(want.GeoLocation != nil) != (got.GeoLocation != nil) || (want.AliasTarget != nil && (got.AliasTarget == nil || !got.AliasTarget.EvaluateTargetHealth)) ||
			(want.GeoProximityLocation != nil && (got.GeoProximityLocation == nil || aws.ToInt32(got.GeoProximityLocation.Bias) != aws.ToInt32(want.GeoProximityLocation.Bias))) ||
			aws.ToBool(got.MultiValueAnswer) != aws.ToBool(want.MultiValueAnswer):
			t.Errorf("%s %s %s listed as %+v, want %+v", aws.ToString(want.Name), want.Type, aws.ToString(want.SetIdentifier), got, want)
		}
	}
	hc, err := c.GetHealthCheck(ctx, &route53.GetHealthCheckInput{HealthCheckId: str.HealthCheck.Id})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := hc.HealthCheck.HealthCheckConfig; len(cfg.Regions) != 3 || aws.ToString(cfg.SearchString) != "ok" || aws.ToInt32(cfg.Port) != 8443 {
		t.Errorf("the string-match check read back as %+v", cfg)
	}
}
