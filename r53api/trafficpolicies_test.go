package r53api

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// failoverDocument is a traffic policy document of a failover rule between two
// addresses.
const failoverDocument = `{"AWSPolicyFormatVersion": "2015-10-01", "RecordType": "A", "StartRule": "site",
  "Endpoints": {"main": {"Type": "value", "Value": "192.0.2.1"}, "backup": {"Type": "value", "Value": "192.0.2.2"}},
  "Rules": {"site": {"RuleType": "failover", "Primary": {"EndpointReference": "main"}, "Secondary": {"EndpointReference": "backup"}}}}`

// TestTrafficPoliciesVersionsAndInstances makes a traffic policy and a second
// version through the SDK, instantiates it in a zone, moves the instance to the
// second version, and deletes what is no longer used; a document the importer
// refuses, a version in use and an instance whose record sets would clash are
// refused with Route 53's codes.
func TestTrafficPoliciesVersionsAndInstances(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	if _, err := c.CreateTrafficPolicy(ctx, &route53.CreateTrafficPolicyInput{Name: aws.String("bad"), Document: aws.String(`{"AWSPolicyFormatVersion": "2015-10-01"}`)}); code(err) != "InvalidTrafficPolicyDocument" {
		t.Errorf("a document without a start: %v, want InvalidTrafficPolicyDocument", err)
	}
	tp, err := c.CreateTrafficPolicy(ctx, &route53.CreateTrafficPolicyInput{Name: aws.String("site"), Document: aws.String(failoverDocument), Comment: aws.String("v1")})
	if err != nil {
		t.Fatal(err)
	}
	id := tp.TrafficPolicy.Id
	if aws.ToInt32(tp.TrafficPolicy.Version) != 1 || tp.TrafficPolicy.Type != types.RRTypeA || aws.ToString(tp.Location) == "" {
		t.Errorf("created %+v", tp.TrafficPolicy)
	}
	v2, err := c.CreateTrafficPolicyVersion(ctx, &route53.CreateTrafficPolicyVersionInput{Id: id, Document: aws.String(strings.Replace(failoverDocument, "192.0.2.2", "192.0.2.3", 1))})
	if err != nil || aws.ToInt32(v2.TrafficPolicy.Version) != 2 || aws.ToString(v2.TrafficPolicy.Name) != "site" {
		t.Fatalf("version 2: %+v, %v", v2, err)
	}
	got, err := c.GetTrafficPolicy(ctx, &route53.GetTrafficPolicyInput{Id: id, Version: aws.Int32(1)})
	if err != nil || aws.ToString(got.TrafficPolicy.Document) != failoverDocument || aws.ToString(got.TrafficPolicy.Comment) != "v1" {
		t.Errorf("GetTrafficPolicy 1: %+v, %v", got, err)
	}
	list, err := c.ListTrafficPolicies(ctx, &route53.ListTrafficPoliciesInput{})
	if err != nil || len(list.TrafficPolicySummaries) != 1 || aws.ToInt32(list.TrafficPolicySummaries[0].LatestVersion) != 2 || aws.ToInt32(list.TrafficPolicySummaries[0].TrafficPolicyCount) != 2 {
		t.Errorf("ListTrafficPolicies: %+v, %v", list, err)
	}
	versions, err := c.ListTrafficPolicyVersions(ctx, &route53.ListTrafficPolicyVersionsInput{Id: id})
	if err != nil || len(versions.TrafficPolicies) != 2 {
		t.Errorf("ListTrafficPolicyVersions: %+v, %v", versions, err)
	}

	zone := aws.String(ZoneID("example.org."))
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone, ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{
		Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String("taken.example.org."), Type: types.RRTypeA, TTL: aws.Int64(60),
			ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.50")}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTrafficPolicyInstance(ctx, &route53.CreateTrafficPolicyInstanceInput{HostedZoneId: zone, Name: aws.String("taken.example.org"), TTL: aws.Int64(60),
		TrafficPolicyId: id, TrafficPolicyVersion: aws.Int32(1)}); code(err) != "InvalidChangeBatch" {
		t.Errorf("an instance at a name with a record set: %v, want InvalidChangeBatch", err)
	}
	in, err := c.CreateTrafficPolicyInstance(ctx, &route53.CreateTrafficPolicyInstanceInput{HostedZoneId: zone, Name: aws.String("www.example.org"), TTL: aws.Int64(60),
		TrafficPolicyId: id, TrafficPolicyVersion: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	iid := in.TrafficPolicyInstance.Id
	if aws.ToString(in.TrafficPolicyInstance.Name) != "www.example.org." || aws.ToString(in.TrafficPolicyInstance.State) != "Applied" || aws.ToString(in.TrafficPolicyInstance.HostedZoneId) != ZoneID("example.org.") {
		t.Errorf("instance %+v", in.TrafficPolicyInstance)
	}
	sets, err := c.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: zone, StartRecordName: aws.String("www.example.org")})
	if err != nil || len(sets.ResourceRecordSets) != 2 || aws.ToString(sets.ResourceRecordSets[0].TrafficPolicyInstanceId) != aws.ToString(iid) ||
		aws.ToString(sets.ResourceRecordSets[0].Name) != "www.example.org." || sets.ResourceRecordSets[0].Failover != types.ResourceRecordSetFailoverPrimary {
		t.Errorf("the instance's record sets listed: %+v, %v; want its failover pair, marked with its ID", sets, err)
	}
	if hz, err := c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: zone}); err != nil || aws.ToInt64(hz.HostedZone.ResourceRecordSetCount) != 3 {
		t.Errorf("GetHostedZone counts %+v, %v; want the record set and the instance's 2", hz, err)
	}
	if n, err := c.GetTrafficPolicyInstanceCount(ctx, &route53.GetTrafficPolicyInstanceCountInput{}); err != nil || aws.ToInt32(n.TrafficPolicyInstanceCount) != 1 {
		t.Errorf("GetTrafficPolicyInstanceCount: %+v, %v; want 1", n, err)
	}
	byZone, err := c.ListTrafficPolicyInstancesByHostedZone(ctx, &route53.ListTrafficPolicyInstancesByHostedZoneInput{HostedZoneId: zone})
	if err != nil || len(byZone.TrafficPolicyInstances) != 1 {
		t.Errorf("ListTrafficPolicyInstancesByHostedZone: %+v, %v", byZone, err)
	}
	for v, want := range map[int32]int{1: 1, 2: 0} {
		byPolicy, err := c.ListTrafficPolicyInstancesByPolicy(ctx, &route53.ListTrafficPolicyInstancesByPolicyInput{TrafficPolicyId: id, TrafficPolicyVersion: aws.Int32(v)})
		if err != nil || len(byPolicy.TrafficPolicyInstances) != want {
			t.Errorf("ListTrafficPolicyInstancesByPolicy version %d: %+v, %v; want %d", v, byPolicy, err, want)
		}
	}
	if out, err := c.UpdateTrafficPolicyComment(ctx, &route53.UpdateTrafficPolicyCommentInput{Id: id, Version: aws.Int32(2), Comment: aws.String("second")}); err != nil || aws.ToString(out.TrafficPolicy.Comment) != "second" {
		t.Errorf("UpdateTrafficPolicyComment: %+v, %v", out, err)
	}
	if got, err := c.GetTrafficPolicy(ctx, &route53.GetTrafficPolicyInput{Id: id, Version: aws.Int32(2)}); err != nil || aws.ToString(got.TrafficPolicy.Comment) != "second" {
		t.Errorf("version 2 after its comment changed: %+v, %v", got, err)
	}
	if _, err := c.DeleteTrafficPolicy(ctx, &route53.DeleteTrafficPolicyInput{Id: id, Version: aws.Int32(1)}); code(err) != "TrafficPolicyInUse" {
		t.Errorf("deleting a version in use: %v, want TrafficPolicyInUse", err)
	}
	if _, err := c.UpdateTrafficPolicyInstance(ctx, &route53.UpdateTrafficPolicyInstanceInput{Id: iid, TTL: aws.Int64(30), TrafficPolicyId: id, TrafficPolicyVersion: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	gi, err := c.GetTrafficPolicyInstance(ctx, &route53.GetTrafficPolicyInstanceInput{Id: iid})
	if err != nil || aws.ToInt32(gi.TrafficPolicyInstance.TrafficPolicyVersion) != 2 || aws.ToInt64(gi.TrafficPolicyInstance.TTL) != 30 {
		t.Errorf("the updated instance: %+v, %v", gi, err)
	}
	if _, err := c.DeleteTrafficPolicy(ctx, &route53.DeleteTrafficPolicyInput{Id: id, Version: aws.Int32(1)}); err != nil {
		t.Errorf("deleting version 1, no longer used: %v", err)
	}
	li, err := c.ListTrafficPolicyInstances(ctx, &route53.ListTrafficPolicyInstancesInput{})
	if err != nil || len(li.TrafficPolicyInstances) != 1 {
		t.Errorf("ListTrafficPolicyInstances: %+v, %v", li, err)
	}
	if _, err := c.DeleteTrafficPolicyInstance(ctx, &route53.DeleteTrafficPolicyInstanceInput{Id: iid}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTrafficPolicyInstance(ctx, &route53.GetTrafficPolicyInstanceInput{Id: iid}); code(err) != "NoSuchTrafficPolicyInstance" {
		t.Errorf("the deleted instance: %v", err)
	}
	if _, err := c.DeleteTrafficPolicy(ctx, &route53.DeleteTrafficPolicyInput{Id: id, Version: aws.Int32(2)}); err != nil {
		t.Errorf("deleting the last version: %v", err)
	}
	if _, err := c.GetTrafficPolicy(ctx, &route53.GetTrafficPolicyInput{Id: id, Version: aws.Int32(2)}); code(err) != "NoSuchTrafficPolicy" {
		t.Errorf("the deleted policy: %v", err)
	}
}
