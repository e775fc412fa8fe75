package test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// TestRoute53APICreatedHostedZoneAnswersWithTheAWSCLI serves example.org with
// route53_api's hosted_zones: aws route53 create-hosted-zone makes
// team.example.org, change-resource-record-sets fills it, and DNS answers it once
// the change is INSYNC; delete-hosted-zone is refused while it holds record sets,
// and once emptied and deleted the name answers nothing.
func TestRoute53APICreatedHostedZoneAnswersWithTheAWSCLI(t *testing.T) {
	dir := t.TempDir()
	keys := writeR53Keys(t, dir)
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	api := fmt.Sprintf("127.0.0.1:%d", apiPort)
	srv := coretest.Start(t, fmt.Sprintf(`example.org:%d {
    bind 127.0.0.1
    healthroute {
        route53_api %s {
            access_keys %s
            hosted_zones
        }
        controls {
            data_dir %s
        }
    }
}
`, port, api, keys, filepath.Join(dir, "state")), port, "example.org")
	cli := newAWSCLI(t, api)

	var created struct {
		HostedZone struct{ Id, Name string }
		ChangeInfo struct{ Id, Status string }
	}
	cli.json(t, &created, "create-hosted-zone", "--name", "team.example.org", "--caller-reference", "runbook-1",
		"--hosted-zone-config", "Comment=the team zone")
	if created.HostedZone.Name != "team.example.org." || created.HostedZone.Id != "/hostedzone/"+r53api.ZoneID("team.example.org.") {
		t.Fatalf("create-hosted-zone: %+v", created)
	}
	cli.waitInSync(t, created.ChangeInfo.Id)
	if out, err := cli.run(t, "create-hosted-zone", "--name", "team.example.org", "--caller-reference", "runbook-2"); err == nil || !strings.Contains(out, "HostedZoneAlreadyExists") {
		t.Errorf("the same name again: %v\n%s\nwant HostedZoneAlreadyExists", err, out)
	}
	if out, err := cli.run(t, "create-hosted-zone", "--name", "example.net", "--caller-reference", "runbook-3"); err == nil || !strings.Contains(out, "InvalidDomainName") {
		t.Errorf("a zone no block holds: %v\n%s\nwant InvalidDomainName", err, out)
	}
	var byName struct{ HostedZones []struct{ Name string } }
	cli.json(t, &byName, "list-hosted-zones-by-name", "--dns-name", "team.example.org", "--max-items", "1")
	if len(byName.HostedZones) != 1 || byName.HostedZones[0].Name != "team.example.org." {
		t.Errorf("list-hosted-zones-by-name: %+v, want team.example.org.", byName)
	}

	record := `{"Action": "%s", "ResourceRecordSet": {"Name": "www.team.example.org", "Type": "A", "TTL": 30, "ResourceRecords": [{"Value": "192.0.2.77"}]}}`
	var ch cliChange
	cli.json(t, &ch, "change-resource-record-sets", "--hosted-zone-id", created.HostedZone.Id, "--change-batch",
		cli.batchFile(t, "create.json", `{"Changes": [`+fmt.Sprintf(record, "CREATE")+`]}`))
	cli.waitInSync(t, ch.ChangeInfo.Id)
	if got := answersA(srv.Query(t, "www.team.example.org", dns.TypeA)); !slices.Equal(got, []string{"192.0.2.77"}) {
		t.Errorf("www.team.example.org answers %v once its change is INSYNC, want 192.0.2.77", got)
	}

	if out, err := cli.run(t, "delete-hosted-zone", "--id", created.HostedZone.Id); err == nil || !strings.Contains(out, "HostedZoneNotEmpty") {
		t.Errorf("deleting the zone with a record set: %v\n%s\nwant HostedZoneNotEmpty", err, out)
	}
	cli.json(t, &ch, "change-resource-record-sets", "--hosted-zone-id", created.HostedZone.Id, "--change-batch",
		cli.batchFile(t, "delete.json", `{"Changes": [`+fmt.Sprintf(record, "DELETE")+`]}`))
	cli.waitInSync(t, ch.ChangeInfo.Id)
	var deleted cliChange
	cli.json(t, &deleted, "delete-hosted-zone", "--id", created.HostedZone.Id)
	cli.waitInSync(t, deleted.ChangeInfo.Id)
	if m := srv.Query(t, "www.team.example.org", dns.TypeA); m.Rcode != dns.RcodeNameError {
		t.Errorf("www.team.example.org answers %s after its zone was deleted, want NXDOMAIN", dns.RcodeToString[m.Rcode])
	}
	if out, err := cli.run(t, "get-hosted-zone", "--id", created.HostedZone.Id); err == nil || !strings.Contains(out, "NoSuchHostedZone") {
		t.Errorf("get-hosted-zone of the deleted zone: %v\n%s\nwant NoSuchHostedZone", err, out)
	}
}
