package route53

import (
	"strings"
	"testing"
)

// TestCNAMEThroughAliases: a zone whose alias brings a CNAME (an alias outside the
// zone) to a name with addresses is refused naming the alias record set, as the
// plugin would refuse the configuration; the same alias alone at its name converts.
func TestCNAMEThroughAliases(t *testing.T) {
	zone := func(secondary string) string {
		return `[{"Name":"lb.example.com.","Type":"A","AliasTarget":{"HostedZoneId":"Z35SXDOTRQ7X7K","DNSName":"dualstack.elb-1.us-east-1.elb.amazonaws.com.","EvaluateTargetHealth":false}},
			{"Name":"www.example.com.","Type":"A","SetIdentifier":"p","Failover":"PRIMARY","AliasTarget":{"HostedZoneId":"Z1","DNSName":"lb.example.com.","EvaluateTargetHealth":false}},
			{"Name":"www.example.com.","Type":"A","SetIdentifier":"s","Failover":"SECONDARY",` + secondary + `}]`
	}
	sets, err := ReadRecordSets(strings.NewReader(zone(`"TTL":60,"ResourceRecords":[{"Value":"192.0.2.2"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Convert(Input{Zone: "example.com.", RecordSets: sets})
	if err == nil || !strings.Contains(err.Error(), `record set www.example.com. A ("p"): alias to lb.example.com. mixes a CNAME and other records at www.example.com. through aliases`) {
		t.Errorf("alias bringing a CNAME beside addresses: %v", err)
	}
	sets, err = ReadRecordSets(strings.NewReader(zone(`"AliasTarget":{"HostedZoneId":"Z1","DNSName":"lb.example.com.","EvaluateTargetHealth":false}`)))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Convert(Input{Zone: "example.com.", RecordSets: sets}); err != nil || !strings.Contains(res.Corefile, "CNAME dualstack.elb-1.us-east-1.elb.amazonaws.com.") {
		t.Errorf("aliases that all bring the CNAME: %v", err)
	}
}
