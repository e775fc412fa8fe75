package r53api

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// TestCidrCollectionsForIPBasedRecordSets creates a CIDR collection through the
// SDK, puts blocks into two locations, lists them, and makes IP-based record
// sets naming them; what Route 53 refuses (a stale version, a collection or
// location in use, an unknown collection) is refused with its codes.
func TestCidrCollectionsForIPBasedRecordSets(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	col, err := c.CreateCidrCollection(ctx, &route53.CreateCidrCollectionInput{Name: aws.String("offices"), CallerReference: aws.String("c1")})
	if err != nil {
		t.Fatal(err)
	}
	id := col.Collection.Id
	if aws.ToInt64(col.Collection.Version) != 1 || aws.ToString(col.Location) == "" || aws.ToString(col.Collection.Arn) != "arn:aws:route53:::cidrcollection/"+aws.ToString(id) {
		t.Errorf("created %+v at %q", col.Collection, aws.ToString(col.Location))
	}
	if _, err := c.CreateCidrCollection(ctx, &route53.CreateCidrCollectionInput{Name: aws.String("offices"), CallerReference: aws.String("c2")}); code(err) != "CidrCollectionAlreadyExistsException" {
		t.Errorf("the same name again: %v", err)
	}
	put := func(version int64, loc string, blocks ...string) error {
		_, err := c.ChangeCidrCollection(ctx, &route53.ChangeCidrCollectionInput{Id: id, CollectionVersion: aws.Int64(version),
			Changes: []types.CidrCollectionChange{{LocationName: aws.String(loc), Action: types.CidrCollectionChangeActionPut, CidrList: blocks}}})
		return err
	}
	if err := put(1, "paris", "198.51.100.0/24", "2001:db8:1::/48"); err != nil {
		t.Fatal(err)
	}
	if err := put(2, "berlin", "203.0.113.0/24"); err != nil {
		t.Fatal(err)
	}
	if err := put(2, "rome", "192.0.2.0/24"); code(err) != "CidrCollectionVersionMismatchException" {
		t.Errorf("a stale version: %v", err)
	}
	if err := put(3, "rome", "192.0.2.1/24"); code(err) != "InvalidInput" {
		t.Errorf("a block with host bits: %v", err)
	}
	if err := put(3, "rome", "192.0.2.0/25"); code(err) != "InvalidInput" {
		t.Errorf("an IPv4 block longer than /24: %v", err)
	}
	blocks, err := c.ListCidrBlocks(ctx, &route53.ListCidrBlocksInput{CollectionId: id})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blocks.CidrBlocks {
		got = append(got, aws.ToString(b.LocationName)+" "+aws.ToString(b.CidrBlock))
	}
	if want := []string{"berlin 203.0.113.0/24", "paris 198.51.100.0/24", "paris 2001:db8:1::/48"}; !slices.Equal(got, want) {
		t.Errorf("blocks %q, want %q", got, want)
	}
	locs, err := c.ListCidrLocations(ctx, &route53.ListCidrLocationsInput{CollectionId: id})
	if err != nil || len(locs.CidrLocations) != 2 || aws.ToString(locs.CidrLocations[1].LocationName) != "paris" {
		t.Errorf("locations %+v, %v", locs, err)
	}
	list, err := c.ListCidrCollections(ctx, &route53.ListCidrCollectionsInput{})
	if err != nil || len(list.CidrCollections) != 1 || aws.ToInt64(list.CidrCollections[0].Version) != 3 {
		t.Errorf("collections %+v, %v", list, err)
	}

	ip := func(setID, loc, value string) types.Change {
		return types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String("office.example.org."), Type: types.RRTypeA,
			SetIdentifier: aws.String(setID), TTL: aws.Int64(60), ResourceRecords: []types.ResourceRecord{{Value: aws.String(value)}},
			CidrRoutingConfig: &types.CidrRoutingConfig{CollectionId: id, LocationName: aws.String(loc)}}}
	}
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org.")),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{ip("paris", "paris", "192.0.2.1"), ip("default", "*", "192.0.2.9")}}}); err != nil {
		t.Fatalf("IP-based record sets naming the collection: %v", err)
	}
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org.")),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{ip("rome", "rome", "192.0.2.3")}}}); code(err) != "InvalidChangeBatch" {
		t.Errorf("a location the collection does not have: %v, want InvalidChangeBatch", err)
	}
	if _, err := c.ChangeCidrCollection(ctx, &route53.ChangeCidrCollectionInput{Id: id, Changes: []types.CidrCollectionChange{{LocationName: aws.String("paris"),
		Action: types.CidrCollectionChangeActionDeleteIfExists, CidrList: []string{"198.51.100.0/24", "2001:db8:1::/48"}}}}); code(err) != "CidrBlockInUseException" {
		t.Errorf("emptying a location a record set uses: %v", err)
	}
	if _, err := c.DeleteCidrCollection(ctx, &route53.DeleteCidrCollectionInput{Id: id}); code(err) != "CidrCollectionInUseException" {
		t.Errorf("deleting a collection in use: %v", err)
	}
	if _, err := c.DeleteCidrCollection(ctx, &route53.DeleteCidrCollectionInput{Id: aws.String("00000000-0000-4000-8000-000000000000")}); code(err) != "NoSuchCidrCollectionException" {
		t.Errorf("deleting an unknown collection: %v", err)
	}
}
