package healthroute

import (
	"testing"
)

// TestAZAffinityParseErrors: bad location lines and members are refused with their
// line.
func TestAZAffinityParseErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"unknown member key", "healthroute {\nrecord a.example.org. azaffinity {\ncountry US A 192.0.2.1\n}\n}", 3, "expected 'az ID', 'zone_group ID'"},
		{"AZ name, not ID", "healthroute {\nrecord a.example.org. azaffinity {\naz us-east-1a A 192.0.2.1\n}\n}", 3, "az_location us-east-1a ZONE_GROUP REGION PARTITION"},
		{"two members for one location", "healthroute {\nrecord a.example.org. azaffinity {\nglobal A 192.0.2.1\nglobal A 192.0.2.2\n}\n}", 4, "location 'global' has a second A member"},
		{"location twice", "healthroute {\nlocation az use1-az1\nlocation az use1-az2\n}", 3, "location is given twice (first at line 2)"},
		{"location type", "healthroute {\nlocation global x\n}", 2, "invalid location type 'global'"},
		{"underivable server location", "healthroute {\nlocation zone_group lab-zg\n}", 2, "zone group 'lab-zg' does not name its region"},
		{"client_location prefix", "healthroute {\nclient_location az use1-az1 10.0.0.0/33\n}", 2, "invalid prefix '10.0.0.0/33'"},
		{"az_location arity", "healthroute {\naz_location lab-az1 lab-zg lab-1\n}", 2, "expected 'az_location AZ_ID ZONE_GROUP REGION PARTITION'"},
	})
	// A location the names do not place is accepted once an az_location line places it.
	mustParse(t, "healthroute {\nlocation zone_group lab-zg\naz_location lab-az1 lab-zg lab-1 aws-lab\nrecord a.example.org. azaffinity {\naz lab-az1 A 192.0.2.1\nglobal A 192.0.2.2\n}\n}")
}
