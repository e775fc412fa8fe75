package test

import (
	"slices"
	"testing"

	"github.com/miekg/dns"
)

// TestRoute53APITestDNSAnswerWithTheAWSCLI runs aws route53 test-dns-answer
// with --edns0-client-subnet-ip against an ip record set (the Corefile's) and a
// weighted one made through the API: it returns what DNS answers a query carrying
// that client subnet, and NXDOMAIN for a name with nothing.
func TestRoute53APITestDNSAnswerWithTheAWSCLI(t *testing.T) {
	s := startR53(t, `        record ip.example.org. ip {
            cidr 198.51.100.0/24 A 192.0.2.1
            cidr 203.0.113.0/24 A 192.0.2.2
            default A 192.0.2.9
        }`)
	cli := newAWSCLI(t, s.api)
	var ch cliChange
	cli.json(t, &ch, "change-resource-record-sets", "--hosted-zone-id", s.zoneID, "--change-batch", cli.batchFile(t, "api.json", `{"Changes": [
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "api.example.org", "Type": "A", "TTL": 30, "ResourceRecords": [{"Value": "192.0.2.50"}, {"Value": "192.0.2.51"}]}}]}`))
	cli.waitInSync(t, ch.ChangeInfo.Id)

	type answer struct {
		Nameserver, RecordName, RecordType, ResponseCode, Protocol string
		RecordData                                                 []string
	}
	for _, tc := range []struct {
		name, ip string
		want     []string
	}{
		{"ip.example.org", "198.51.100.77", []string{"192.0.2.1"}},
		{"ip.example.org", "203.0.113.200", []string{"192.0.2.2"}},
		{"ip.example.org", "192.0.2.33", []string{"192.0.2.9"}},
		{"api.example.org", "198.51.100.77", []string{"192.0.2.50", "192.0.2.51"}},
	} {
		var a answer
		cli.json(t, &a, "test-dns-answer", "--hosted-zone-id", s.zoneID, "--record-name", tc.name, "--record-type", "A", "--edns0-client-subnet-ip", tc.ip)
		got := slices.Sorted(slices.Values(a.RecordData))
		_, _, reply := queryECS(t, s.srv.Addr, tc.name+".", tc.ip+"/24")
		dnsGot := answersA(reply)
		if !slices.Equal(got, tc.want) || !slices.Equal(dnsGot, got) || a.ResponseCode != "NOERROR" || a.RecordName != tc.name+"." || a.Protocol != "UDP" {
			t.Errorf("%s for ECS %s/24: test-dns-answer %+v, DNS %v; want both %v", tc.name, tc.ip, a, dnsGot, tc.want)
		}
	}
	var a answer
	cli.json(t, &a, "test-dns-answer", "--hosted-zone-id", s.zoneID, "--record-name", "nothing.example.org", "--record-type", "A")
	if m := s.srv.Query(t, "nothing.example.org", dns.TypeA); a.ResponseCode != dns.RcodeToString[m.Rcode] || a.ResponseCode != "NXDOMAIN" || len(a.RecordData) != 0 {
		t.Errorf("a name with nothing: test-dns-answer %+v, DNS %s; want NXDOMAIN from both", a, dns.RcodeToString[m.Rcode])
	}
}
