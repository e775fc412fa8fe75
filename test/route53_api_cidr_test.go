package test

import (
	"fmt"
	"slices"
	"testing"
)

// TestRoute53APICidrCollectionWithTheAWSCLI makes a CIDR collection with the aws
// CLI, puts a location's blocks into it, and creates IP-based record sets naming
// it: DNS answers a client in the location with its record set and any other
// with the default, as test-dns-answer says; a change of the location's blocks
// moves the answers once INSYNC.
func TestRoute53APICidrCollectionWithTheAWSCLI(t *testing.T) {
	s := startR53(t, "")
	cli := newAWSCLI(t, s.api)
	var col struct{ Collection struct{ Id string } }
	cli.json(t, &col, "create-cidr-collection", "--name", "offices", "--caller-reference", "offices-1")
	var changed struct{ Id string }
	cli.json(t, &changed, "change-cidr-collection", "--id", col.Collection.Id, "--collection-version", "1", "--changes",
		`[{"LocationName": "paris", "Action": "PUT", "CidrList": ["198.51.100.0/24"]}]`)
	var ch cliChange
	cli.json(t, &ch, "change-resource-record-sets", "--hosted-zone-id", s.zoneID, "--change-batch", cli.batchFile(t, "ip.json", fmt.Sprintf(`{"Changes": [
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "office.example.org", "Type": "A", "SetIdentifier": "paris", "TTL": 30,
      "CidrRoutingConfig": {"CollectionId": %q, "LocationName": "paris"}, "ResourceRecords": [{"Value": "192.0.2.1"}]}},
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "office.example.org", "Type": "A", "SetIdentifier": "elsewhere", "TTL": 30,
      "CidrRoutingConfig": {"CollectionId": %q, "LocationName": "*"}, "ResourceRecords": [{"Value": "192.0.2.9"}]}}]}`, col.Collection.Id, col.Collection.Id)))
	cli.waitInSync(t, ch.ChangeInfo.Id)

	answers := func(client string) (dnsAnswer, apiAnswer []string) {
		_, _, reply := queryECS(t, s.srv.Addr, "office.example.org.", client+"/24")
		var a struct{ RecordData []string }
		cli.json(t, &a, "test-dns-answer", "--hosted-zone-id", s.zoneID, "--record-name", "office.example.org", "--record-type", "A", "--edns0-client-subnet-ip", client)
		return answersA(reply), a.RecordData
	}
	for client, want := range map[string]string{"198.51.100.20": "192.0.2.1", "203.0.113.20": "192.0.2.9"} {
		if d, a := answers(client); !slices.Equal(d, []string{want}) || !slices.Equal(a, []string{want}) {
			t.Errorf("client %s: DNS %v, test-dns-answer %v; want %s", client, d, a, want)
		}
	}
	cli.json(t, &changed, "change-cidr-collection", "--id", col.Collection.Id, "--changes",
		`[{"LocationName": "paris", "Action": "PUT", "CidrList": ["203.0.113.0/24"]}]`)
	cli.waitInSync(t, changed.Id)
	if d, _ := answers("203.0.113.20"); !slices.Equal(d, []string{"192.0.2.1"}) {
		t.Errorf("a client in the block put into paris: DNS %v, want 192.0.2.1", d)
	}
	if out, err := cli.run(t, "delete-cidr-collection", "--id", col.Collection.Id); err == nil {
		t.Errorf("delete-cidr-collection of a collection in use: accepted\n%s", out)
	}
}
