package test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/view"
)

// TestRoute53APIWeightedAndFailover drives the API with aws-sdk-go-v2's route53
// client, as Terraform's provider does: health checks, weighted and failover
// record sets using them, the change INSYNC, and DNS answering as Route 53 would
// (the member whose check fails is left out; the failover primary's failure
// answers the secondary). Then UPSERT and DELETE.
func TestRoute53APIWeightedAndFailover(t *testing.T) {
	s := startR53(t, "        record static.example.org simple {\n            A 192.0.2.99\n        }")
	ctx := context.Background()
	up, down := healthyEndpoint(t), downEndpoint(t)
	upID := createCheck(t, s.client, "up-1", up)
	downID := createCheck(t, s.client, "down-1", down)

	id := s.change(t,
		create(aSet("w.example.org", "192.0.2.1", "one", func(rs *types.ResourceRecordSet) { rs.Weight = aws.Int64(50); rs.HealthCheckId = aws.String(upID) })),
		create(aSet("w.example.org", "192.0.2.2", "two", func(rs *types.ResourceRecordSet) { rs.Weight = aws.Int64(50); rs.HealthCheckId = aws.String(downID) })),
		create(aSet("f.example.org", "192.0.2.10", "primary", func(rs *types.ResourceRecordSet) {
			rs.Failover = types.ResourceRecordSetFailoverPrimary
			rs.HealthCheckId = aws.String(downID)
		})),
		create(aSet("f.example.org", "192.0.2.20", "secondary", func(rs *types.ResourceRecordSet) { rs.Failover = types.ResourceRecordSetFailoverSecondary })),
	)
	waitInSync(t, s.client, id)

	for range 20 { // the weighted set never answers the member whose check fails
		s.srv.WaitFor(t, "w.example.org", dns.TypeA, 15*time.Second, "w.example.org answers only the healthy member", func(m *dns.Msg) bool {
			return slices.Equal(answersA(m), []string{"192.0.2.1"})
		})
	}
	s.srv.WaitFor(t, "f.example.org", dns.TypeA, 15*time.Second, "failover answers the secondary", func(m *dns.Msg) bool {
		return slices.Equal(answersA(m), []string{"192.0.2.20"})
	})
	if got := answersA(s.srv.Query(t, "static.example.org", dns.TypeA)); !slices.Equal(got, []string{"192.0.2.99"}) {
		t.Errorf("the Corefile's record answers %v, want 192.0.2.99", got)
	}
	checkAPIManagedMarks(t, s)

	list, err := s.client.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rs := range list.ResourceRecordSets {
		got = append(got, aws.ToString(rs.Name)+" "+aws.ToString(rs.SetIdentifier))
	}
	want := []string{"example.org. ", "f.example.org. primary", "f.example.org. secondary", "static.example.org. ", "w.example.org. one", "w.example.org. two"}
	if !slices.Equal(got, want) || list.IsTruncated {
		t.Errorf("listed %q (truncated %t), want %q", got, list.IsTruncated, want)
	}

	// UPSERT the primary onto the healthy check: the primary answers.
	id = s.change(t, types.Change{Action: types.ChangeActionUpsert, ResourceRecordSet: aSet("f.example.org", "192.0.2.11", "primary", func(rs *types.ResourceRecordSet) {
		rs.Failover = types.ResourceRecordSetFailoverPrimary
		rs.HealthCheckId = aws.String(upID)
	})})
	waitInSync(t, s.client, id)
	s.srv.WaitFor(t, "f.example.org", dns.TypeA, 15*time.Second, "the upserted primary answers", func(m *dns.Msg) bool {
		return slices.Equal(answersA(m), []string{"192.0.2.11"})
	})

	// DELETE the weighted set's members: the name no longer exists.
	id = s.change(t,
		types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: aSet("w.example.org", "192.0.2.1", "one", func(rs *types.ResourceRecordSet) { rs.Weight = aws.Int64(50); rs.HealthCheckId = aws.String(upID) })},
		types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: aSet("w.example.org", "192.0.2.2", "two", func(rs *types.ResourceRecordSet) { rs.Weight = aws.Int64(50); rs.HealthCheckId = aws.String(downID) })},
	)
	waitInSync(t, s.client, id)
	s.srv.WaitFor(t, "w.example.org", dns.TypeA, 15*time.Second, "the deleted name answers NXDOMAIN", func(m *dns.Msg) bool {
		return m.Rcode == dns.RcodeNameError
	})
	if _, err := s.client.DeleteHealthCheck(ctx, &route53.DeleteHealthCheckInput{HealthCheckId: aws.String(upID)}); apiCode(err) != "HealthCheckInUse" {
		t.Errorf("deleting a check a record set uses: %v, want HealthCheckInUse", err)
	}
	if _, err := s.client.DeleteHealthCheck(ctx, &route53.DeleteHealthCheckInput{HealthCheckId: aws.String(downID)}); err != nil {
		t.Errorf("deleting an unused check: %v", err)
	}
}

// TestRoute53APIBadBatchRefusedWhole sends batches Route 53 refuses: each is
// refused with InvalidChangeBatch and its messages, and nothing of it applies
// (the listing and the DNS answers are as before).
func TestRoute53APIBadBatchRefusedWhole(t *testing.T) {
	s := startR53(t, "        record static.example.org simple {\n            A 192.0.2.99\n        }")
	ctx := context.Background()
	waitInSync(t, s.client, s.change(t, create(aSet("a.example.org", "192.0.2.1", "", nil))))

	bad := map[string][]types.Change{
		"already exists": {create(aSet("b.example.org", "192.0.2.2", "", nil)), create(aSet("a.example.org", "192.0.2.3", "", nil))},
		"was not found":  {create(aSet("c.example.org", "192.0.2.4", "", nil)), {Action: types.ChangeActionDelete, ResourceRecordSet: aSet("nope.example.org", "192.0.2.5", "", nil)}},
		"do not match":   {create(aSet("d.example.org", "192.0.2.6", "", nil)), {Action: types.ChangeActionDelete, ResourceRecordSet: aSet("a.example.org", "192.0.2.7", "", nil)}},
		"read-only":      {create(aSet("e.example.org", "192.0.2.8", "", nil)), create(aSet("static.example.org", "192.0.2.9", "", nil))},
		"not permitted":  {create(aSet("f.example.org", "192.0.2.8", "", nil)), create(aSet("www.example.net", "192.0.2.9", "", nil))},
	}
	for want, changes := range bad {
		_, err := s.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID),
			ChangeBatch: &types.ChangeBatch{Changes: changes}})
		var icb *types.InvalidChangeBatch
		if !asInvalidChangeBatch(err, &icb) || !strings.Contains(icb.ErrorMessage(), want) {
			t.Errorf("batch %q: %v, want InvalidChangeBatch saying %q", want, err, want)
		}
	}
	list, err := s.client.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rs := range list.ResourceRecordSets {
		names = append(names, aws.ToString(rs.Name))
	}
	if !slices.Equal(names, []string{"example.org.", "a.example.org.", "static.example.org."}) {
		t.Errorf("after the refused batches the zone lists %v, want the SOA, a.example.org. (the API's) and static.example.org. (the Corefile's) alone", names)
	}
	for _, n := range []string{"b.example.org", "c.example.org", "d.example.org", "e.example.org"} {
		if m := s.srv.Query(t, n, dns.TypeA); m.Rcode != dns.RcodeNameError {
			t.Errorf("%s answers %s after its refused batch, want NXDOMAIN", n, dns.RcodeToString[m.Rcode])
		}
	}
	if got := answersA(s.srv.Query(t, "static.example.org", dns.TypeA)); !slices.Equal(got, []string{"192.0.2.99"}) {
		t.Errorf("the Corefile's record answers %v, want 192.0.2.99", got)
	}
}

// checkAPIManagedMarks checks that the API's record sets w. and f. are marked
// API-managed on /v1/records, in explain and on the status page, and the
// Corefile's static. is not.
func checkAPIManagedMarks(t *testing.T, s *r53Server) {
	t.Helper()
	var records struct{ Records []view.Record }
	getJSON(t, s.status+"/v1/records", &records)
	marked := map[string]bool{}
	for _, r := range records.Records {
		marked[r.Name] = r.API
	}
	if !marked["w.example.org."] || !marked["f.example.org."] || marked["static.example.org."] {
		t.Errorf("API-managed marks on /v1/records: %v, want w. and f. marked, static. not", marked)
	}
	var ex view.Explanation
	getJSON(t, s.status+"/v1/explain?name=w.example.org&type=A", &ex)
	if ex.Trace == nil || len(ex.Trace.Steps) == 0 || !ex.Trace.Steps[0].API {
		t.Errorf("explain of w.example.org: %+v, want its step marked API-managed", ex.Trace)
	}
	if code, page := httpDo(t, "GET", s.status+"/", "", ""); code != 200 || !strings.Contains(page, "API-managed") {
		t.Errorf("status page: %d, API-managed label present %t", code, strings.Contains(page, "API-managed"))
	}
}
