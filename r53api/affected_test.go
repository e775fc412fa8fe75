package r53api

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// TestBatchCheckedWithWhatAliasesJoin: a batch is converted with the sets at
// the names it changes and those aliases join to them, not the whole zone: a
// DELETE of an alias's target, two names away from the alias, and a CNAME beside
// a set the batch does not touch are still refused.
func TestBatchCheckedWithWhatAliasesJoin(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	zone := aws.String(ZoneID("example.org."))
	alias := func(name, target string) types.Change {
		return types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA,
			AliasTarget: &types.AliasTarget{HostedZoneId: zone, DNSName: aws.String(target)}}}
	}
	target := batchOf(types.ChangeActionCreate, "t.example.org.", "192.0.2.1")
	target.Changes = append(target.Changes, alias("mid.example.org.", "t.example.org."), alias("top.example.org.", "mid.example.org."))
	target.Changes = append(target.Changes, batchOf(types.ChangeActionCreate, "other.example.org.", "192.0.2.9").Changes...)
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone, ChangeBatch: target}); err != nil {
		t.Fatal(err)
	}
	var icb *types.InvalidChangeBatch
	_, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone,
		ChangeBatch: batchOf(types.ChangeActionDelete, "t.example.org.", "192.0.2.1")})
	if !errors.As(err, &icb) || !strings.Contains(icb.ErrorMessage(), "t.example.org.") {
		t.Errorf("deleting the target of an alias: %v, want InvalidChangeBatch naming it", err)
	}
	cname := &types.ResourceRecordSet{Name: aws.String("other.example.org."), Type: types.RRTypeCname, TTL: aws.Int64(60),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String("x.example.net.")}}}
	_, err = c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone,
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: cname}}}})
	if !errors.As(err, &icb) || !strings.Contains(icb.ErrorMessage(), "CNAME") {
		t.Errorf("a CNAME beside an A record set the batch leaves alone: %v, want InvalidChangeBatch naming the CNAME", err)
	}
}
