package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"
)

// TestRoute53APIPaginates10000RecordSets creates 10,000 record sets in batches of
// 1,000 (Route 53's most per batch) and lists them back with the SDK's paginator,
// 300 a page, as Terraform and external-dns read a zone: every record set once,
// in Route 53's order, and a listing that starts at a name.
func TestRoute53APIPaginates10000RecordSets(t *testing.T) {
	s := startR53(t, "")
	ctx := context.Background()
	const n, perBatch = 10000, 1000
	start := time.Now()
	var last string
	for b := 0; b < n/perBatch; b++ {
		var changes []types.Change
		for i := b * perBatch; i < (b+1)*perBatch; i++ {
			changes = append(changes, create(aSet(fmt.Sprintf("h%05d.example.org", i), fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), "", nil)))
		}
		last = s.change(t, changes...)
	}
	created := time.Since(start)
	waitInSync(t, s.client, last)
	t.Logf("10,000 record sets: created in %v (10 batches), INSYNC after %v", created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	var names []string
	pages := 0
	p := route53.NewListResourceRecordSetsPaginator(s.client, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID)})
	for p.HasMorePages() && pages < 100 {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		for _, rs := range out.ResourceRecordSets {
			names = append(names, aws.ToString(rs.Name))
		}
	}
	t.Logf("listed in %v, %d pages", time.Since(start).Round(time.Millisecond), pages)
	if len(names) != n+1 || pages != (n+1+299)/300 || names[0] != "example.org." {
		t.Fatalf("listed %d record sets in %d pages, first %s; want %d (the SOA first) in %d", len(names), pages, names[0], n+1, (n+1+299)/300)
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != n+1 {
		t.Errorf("the listing is not every name once in order: first %v, last %v", names[:3], names[len(names)-3:])
	}

	out, err := s.client.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID),
		StartRecordName: aws.String("h09998.example.org"), StartRecordType: types.RRTypeA})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ResourceRecordSets) != 2 || aws.ToString(out.ResourceRecordSets[0].Name) != "h09998.example.org." || out.IsTruncated {
		t.Errorf("listing from h09998: %d record sets, truncated %t", len(out.ResourceRecordSets), out.IsTruncated)
	}
	out, err = s.client.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID),
		StartRecordName: aws.String("h00100.example.org"), MaxItems: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ResourceRecordSets) != 2 || !out.IsTruncated || aws.ToString(out.NextRecordName) != "h00102.example.org." || out.NextRecordType != types.RRTypeA {
		t.Errorf("two from h00100: %d, truncated %t, next %s %s", len(out.ResourceRecordSets), out.IsTruncated, aws.ToString(out.NextRecordName), out.NextRecordType)
	}
	for _, i := range []int{0, 4321, 9999} {
		want := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		if got := answersA(s.srv.Query(t, fmt.Sprintf("h%05d.example.org", i), dns.TypeA)); !slices.Equal(got, []string{want}) {
			t.Errorf("h%05d answers %v, want %s", i, got, want)
		}
	}
}
