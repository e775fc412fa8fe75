package route53

import (
	"strings"
	"testing"
)

// TestAZAffinityErrors: AZ-affinity record sets that cannot be converted are refused
// naming the record set and the field.
func TestAZAffinityErrors(t *testing.T) {
	tests := []struct{ name, records, want string }{
		{"unknown location type", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","AZAffinity":{"LocationType":"LocalZone","LocationId":"use1-bos1-az1"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. A ("a"): AZAffinity LocationType "LocalZone", expected AvailabilityZone, AvailabilityZoneGroup, Region, Partition or Global`},
		{"no location id", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","AZAffinity":{"LocationType":"Region"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. A ("a"): AZAffinity Region without a LocationId`},
		{"blank in the id", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","AZAffinity":{"LocationType":"AvailabilityZone","LocationId":"use1 az1"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`AZAffinity LocationId "use1 az1", expected an ID such as use1-az1`},
		{"with another policy", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Weight":1,"AZAffinity":{"LocationType":"Global","LocationId":"global"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`routing policies weighted and azaffinity at once`},
		{"without a set identifier", `[{"Name":"x.example.com.","Type":"A","AZAffinity":{"LocationType":"Global","LocationId":"global"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`azaffinity record set without a SetIdentifier`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets, err := ReadRecordSets(strings.NewReader(tc.records))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Convert(Input{Zone: "example.com.", RecordSets: sets})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
