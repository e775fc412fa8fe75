package r53api

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// TestReversedKeepsTheTrailingDot checks the sort key against AWS's documented
// example (www.example.com. is com.example.www.) and the names its reference warns
// about, with characters below '.' in ASCII.
func TestReversedKeepsTheTrailingDot(t *testing.T) {
	for name, want := range map[string]string{
		"www.example.com.": "com.example.www.",
		"example.com.":     "com.example.",
		".":                ".",
		"a-b.example.com.": "com.example.a-b.",
	} {
		if got := reversed(name); got != want {
			t.Errorf("reversed(%q) = %q, want %q", name, got, want)
		}
	}
	if !(reversed("a-b.example.com.") < reversed("a.example.com.")) {
		t.Errorf("a-b.example.com. must sort before a.example.com. ('-' is below '.')")
	}
}

// TestListInRoute53Order lists record sets whose names hold characters below '.'
// (! * -) in Route 53's order, page by page, and starts listings at a name: the
// name's own record sets come first, and every later one follows.
func TestListInRoute53Order(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.com."})
	ctx := context.Background()
	zone := aws.String(ZoneID("example.com."))
	names := []string{"www.example.com.", "a.example.com.", "b.a.example.com.", "a-b.example.com.", "a!.example.com.", "*.example.com.", "example.com.", "a+.example.com."}
	var changes []types.Change
	for _, n := range names {
		changes = append(changes, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{
			Name: aws.String(n), Type: types.RRTypeTxt, TTL: aws.Int64(60), ResourceRecords: []types.ResourceRecord{{Value: aws.String(`"x"`)}}}})
	}
	changes = append(changes, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{
		Name: aws.String("a.example.com."), Type: types.RRTypeA, TTL: aws.Int64(60), ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}}})
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone, ChangeBatch: &types.ChangeBatch{Changes: changes}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com. TXT", "*.example.com. TXT", "a!.example.com. TXT", "a+.example.com. TXT", "a-b.example.com. TXT",
		"a.example.com. A", "a.example.com. TXT", "b.a.example.com. TXT", "www.example.com. TXT"}

	list := func(name, typ string, max int32) ([]string, *route53.ListResourceRecordSetsOutput) {
		t.Helper()
		in := &route53.ListResourceRecordSetsInput{HostedZoneId: zone, MaxItems: aws.Int32(max)}
		if name != "" {
			in.StartRecordName = aws.String(name)
		}
		if typ != "" {
			in.StartRecordType = types.RRType(typ)
		}
		out, err := c.ListResourceRecordSets(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rs := range out.ResourceRecordSets {
			got = append(got, aws.ToString(rs.Name)+" "+string(rs.Type))
		}
		return got, out
	}
	var paged []string
	name, typ := "", ""
	for range 20 {
		got, out := list(name, typ, 2)
		paged = append(paged, got...)
		if !out.IsTruncated {
			break
		}
		name, typ = aws.ToString(out.NextRecordName), string(out.NextRecordType)
	}
	if !slices.Equal(paged, want) {
		t.Errorf("listed 2 at a time:\n%q\nwant Route 53's order:\n%q", paged, want)
	}
	if got, _ := list("a-b.example.com.", "", 300); !slices.Equal(got, want[4:]) {
		t.Errorf("from a-b.example.com.: %q, want %q", got, want[4:])
	}
	if got, _ := list("A.Example.com", "TXT", 300); !slices.Equal(got, want[6:]) {
		t.Errorf("from A.Example.com TXT: %q, want %q", got, want[6:])
	}
	if got, _ := list("a.example.com.", "", 1); !slices.Equal(got, want[5:6]) {
		t.Errorf("from a.example.com., 1 item: %q, want %q", got, want[5:6])
	}
}
