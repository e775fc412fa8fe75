package r53api

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// TestCreatedHostedZoneLifecycle creates, through the SDK, a hosted zone below a
// zone that delegates to the API, fills it, lists it, and deletes it once empty;
// what Route 53 refuses is refused with its codes.
func TestCreatedHostedZoneLifecycle(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org.", Delegates: true}, Zone{Name: "example.com."})
	ctx := context.Background()
	out, err := c.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("Team.example.org"), CallerReference: aws.String("tf-1"),
		HostedZoneConfig: &types.HostedZoneConfig{Comment: aws.String("the team's")}})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.HostedZone.Id)
	if aws.ToString(out.HostedZone.Name) != "team.example.org." || id != "/hostedzone/"+ZoneID("team.example.org.") || out.ChangeInfo == nil || aws.ToString(out.Location) == "" {
		t.Fatalf("created %+v %+v, location %q", out.HostedZone, out.ChangeInfo, aws.ToString(out.Location))
	}
	got, err := c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(id)})
	if err != nil || aws.ToString(got.HostedZone.Config.Comment) != "the team's" || aws.ToString(got.HostedZone.CallerReference) != "tf-1" {
		t.Fatalf("GetHostedZone: %+v, %v", got, err)
	}
	by, err := c.ListHostedZonesByName(ctx, &route53.ListHostedZonesByNameInput{DNSName: aws.String("team.example.org")})
	if err != nil || len(by.HostedZones) != 1 || aws.ToString(by.HostedZones[0].Name) != "team.example.org." {
		t.Fatalf("ListHostedZonesByName(team.example.org): %+v, %v", by, err)
	}
	for _, tc := range []struct {
		in   route53.CreateHostedZoneInput
		code string
	}{
		{route53.CreateHostedZoneInput{Name: aws.String("other.example.org"), CallerReference: aws.String("tf-1")}, "HostedZoneAlreadyExists"},
		{route53.CreateHostedZoneInput{Name: aws.String("team.example.org"), CallerReference: aws.String("tf-2")}, "HostedZoneAlreadyExists"},
		{route53.CreateHostedZoneInput{Name: aws.String("example.com"), CallerReference: aws.String("tf-3")}, "HostedZoneAlreadyExists"},
		{route53.CreateHostedZoneInput{Name: aws.String("x.example.com"), CallerReference: aws.String("tf-4")}, "InvalidDomainName"},
		{route53.CreateHostedZoneInput{Name: aws.String("a..example.org"), CallerReference: aws.String("tf-5")}, "InvalidDomainName"},
		{route53.CreateHostedZoneInput{Name: aws.String("p.example.org"), CallerReference: aws.String("tf-6"), VPC: &types.VPC{VPCId: aws.String("vpc-1"), VPCRegion: types.VPCRegionUsEast1}}, "InvalidInput"},
	} {
		if _, err := c.CreateHostedZone(ctx, &tc.in); code(err) != tc.code {
			t.Errorf("CreateHostedZone(%s, %s): %v, want %s", aws.ToString(tc.in.Name), aws.ToString(tc.in.CallerReference), err, tc.code)
		}
	}
	tp, err := c.CreateTrafficPolicy(ctx, &route53.CreateTrafficPolicyInput{Name: aws.String("site"), Document: aws.String(failoverDocument)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTrafficPolicyInstance(ctx, &route53.CreateTrafficPolicyInstanceInput{HostedZoneId: aws.String(ZoneID("example.org.")), Name: aws.String("app.team.example.org"),
		TTL: aws.Int64(60), TrafficPolicyId: tp.TrafficPolicy.Id, TrafficPolicyVersion: aws.Int32(1)}); code(err) != "InvalidInput" {
		t.Errorf("an instance in the parent at a name of the created zone: %v, want InvalidInput", err)
	}
	a := types.ResourceRecordSet{Name: aws.String("www.team.example.org."), Type: types.RRTypeA, TTL: aws.Int64(60), ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.7")}}}
	change := func(zone string, action types.ChangeAction) error {
		_, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone),
			ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: action, ResourceRecordSet: &a}}}})
		return err
	}
	if err := change(ZoneID("example.org."), types.ChangeActionCreate); code(err) != "InvalidChangeBatch" || !strings.Contains(err.Error(), "hosted zone team.example.org.") {
		t.Errorf("a name of the created zone through its parent: %v, want InvalidChangeBatch naming team.example.org.", err)
	}
	if err := change(id, types.ChangeActionCreate); err != nil {
		t.Fatal(err)
	}
	sets, err := c.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(id)})
	if err != nil || len(sets.ResourceRecordSets) != 1 || aws.ToString(sets.ResourceRecordSets[0].Name) != "www.team.example.org." {
		t.Fatalf("the created zone's record sets: %+v, %v", sets, err)
	}
	if _, err := c.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("www.team.example.org"), CallerReference: aws.String("tf-7")}); code(err) != "ConflictingDomainExists" {
		t.Errorf("a zone over another's record sets: %v, want ConflictingDomainExists", err)
	}
	if _, err := c.DeleteHostedZone(ctx, &route53.DeleteHostedZoneInput{Id: aws.String(id)}); code(err) != "HostedZoneNotEmpty" {
		t.Errorf("deleting a zone with record sets: %v, want HostedZoneNotEmpty", err)
	}
	if _, err := c.DeleteHostedZone(ctx, &route53.DeleteHostedZoneInput{Id: aws.String(ZoneID("example.org."))}); code(err) != "InvalidInput" {
		t.Errorf("deleting a Corefile zone: %v, want InvalidInput", err)
	}
	if err := change(id, types.ChangeActionDelete); err != nil {
		t.Fatal(err)
	}
	del, err := c.DeleteHostedZone(ctx, &route53.DeleteHostedZoneInput{Id: aws.String(id)})
	if err != nil || del.ChangeInfo == nil {
		t.Fatalf("DeleteHostedZone: %+v, %v", del, err)
	}
	if _, err := c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(id)}); code(err) != "NoSuchHostedZone" {
		t.Errorf("the deleted zone: %v, want NoSuchHostedZone", err)
	}
	if n, err := c.GetHostedZoneCount(ctx, &route53.GetHostedZoneCountInput{}); err != nil || aws.ToInt64(n.HostedZoneCount) != 2 {
		t.Errorf("GetHostedZoneCount after the delete: %v, %v; want 2", n, err)
	}
}
