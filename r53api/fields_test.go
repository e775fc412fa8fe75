package r53api

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// TestFreeTextBounded: a change batch's comment, a caller reference, a health
// check's text and a tag past Route 53's bounds are refused with InvalidInput
// and nothing of them is kept; at the bounds they are accepted.
func TestFreeTextBounded(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	zone := aws.String(ZoneID("example.org."))
	big := strings.Repeat("x", 200_000)
	for _, comment := range []string{big, strings.Repeat("é", MaxCommentChars+1)} {
		b := batchOf(types.ChangeActionUpsert, "a.example.org.", "192.0.2.1")
		b.Comment = aws.String(comment)
		_, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone, ChangeBatch: b})
		if code(err) != "InvalidInput" || !strings.Contains(err.Error(), "changeBatch.comment") {
			t.Errorf("a comment of %d characters: %v, want InvalidInput naming changeBatch.comment", len([]rune(comment)), err)
		}
	}
	if n := len(s.state().Changes); n != 0 {
		t.Errorf("%d changes kept after refused batches, want none", n)
	}
	b := batchOf(types.ChangeActionUpsert, "a.example.org.", "192.0.2.1")
	b.Comment = aws.String(strings.Repeat("é", MaxCommentChars))
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone, ChangeBatch: b}); err != nil {
		t.Errorf("a comment of %d characters: %v", MaxCommentChars, err)
	}
	cfg := &types.HealthCheckConfig{Type: types.HealthCheckTypeHttp, IPAddress: aws.String("192.0.2.1"), Port: aws.Int32(80), ResourcePath: aws.String("/" + big)}
	if _, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("r1"), HealthCheckConfig: cfg}); code(err) != "InvalidInput" {
		t.Errorf("a resource path of 200,001 characters: %v, want InvalidInput", err)
	}
	cfg.ResourcePath = aws.String("/health")
	if _, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String(strings.Repeat("r", MaxCallerReferenceChars+1)), HealthCheckConfig: cfg}); code(err) != "InvalidInput" {
		t.Errorf("a caller reference of %d characters: %v, want InvalidInput", MaxCallerReferenceChars+1, err)
	}
	hc, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String(strings.Repeat("r", MaxCallerReferenceChars)), HealthCheckConfig: cfg})
	if err != nil {
		t.Fatalf("a caller reference of %d characters: %v", MaxCallerReferenceChars, err)
	}
	if _, err := c.UpdateHealthCheck(ctx, &route53.UpdateHealthCheckInput{HealthCheckId: hc.HealthCheck.Id, SearchString: aws.String(big)}); code(err) != "InvalidInput" {
		t.Errorf("an update to a search string of 200,000 characters: %v, want InvalidInput", err)
	}
	if _, err := c.ChangeTagsForResource(ctx, &route53.ChangeTagsForResourceInput{ResourceId: hc.HealthCheck.Id, ResourceType: types.TagResourceTypeHealthcheck,
		AddTags: []types.Tag{{Key: aws.String("k"), Value: aws.String(big)}}}); code(err) != "InvalidInput" {
		t.Errorf("a tag value of 200,000 characters: %v, want InvalidInput", err)
	}
	if len(s.state().Tags) != 0 || s.state().HealthChecks[aws.ToString(hc.HealthCheck.Id)].HealthCheckConfig.SearchString != "" {
		t.Errorf("refused text kept: tags %v", s.state().Tags)
	}
}
