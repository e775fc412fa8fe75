package route53

import (
	"fmt"
	"strings"
)

// AZAffinity is an AZ-affinity record set's location: its type (AvailabilityZone,
// AvailabilityZoneGroup, Region, Partition or Global) and ID (use1-az1,
// us-east-1-zg-1, us-east-1, aws).
type AZAffinity struct {
	LocationType string
	LocationId   string
}

// azLocationKeys are the azaffinity member keys of Route 53's location types.
var azLocationKeys = map[string]string{"AvailabilityZone": "az", "AvailabilityZoneGroup": "zone_group",
	"Region": "region", "Partition": "partition", "Global": "global"}

// azAffinityKey returns the azaffinity member key of a location: `az use1-az1`,
// `zone_group us-east-1-zg-1`, `region us-east-1`, `partition aws` or `global`.
func azAffinityKey(a *AZAffinity) (string, error) {
	key, ok := azLocationKeys[a.LocationType]
	switch {
	case !ok:
		return "", fmt.Errorf("AZAffinity LocationType %q, expected AvailabilityZone, AvailabilityZoneGroup, Region, Partition or Global", a.LocationType)
	case key == "global":
		return key, nil
	case a.LocationId == "":
		return "", fmt.Errorf("AZAffinity %s without a LocationId", a.LocationType)
	}
	id, err := token(a.LocationId)
	if err != nil || id != a.LocationId || strings.ContainsAny(id, "/\\") {
		return "", fmt.Errorf("AZAffinity LocationId %q, expected an ID such as use1-az1", a.LocationId)
	}
	return key + " " + strings.ToLower(id), nil
}
