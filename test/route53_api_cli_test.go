package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// awsCLI runs Debian's aws CLI against a Route 53 API on loopback, with a test
// profile's credentials from files in a temporary directory.
type awsCLI struct {
	bin, endpoint string
	env           []string
	dir           string
}

func newAWSCLI(t *testing.T, endpoint string) *awsCLI {
	t.Helper()
	bin := "/usr/bin/aws"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Debian's aws CLI (%s) is not installed: run scripts/test-deps", bin)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	creds := filepath.Join(dir, "credentials")
	os.WriteFile(cfg, []byte("[profile healthroute-test]\nregion = us-east-1\noutput = json\n"), 0o600)
	os.WriteFile(creds, []byte(fmt.Sprintf("[healthroute-test]\naws_access_key_id = %s\naws_secret_access_key = %s\n", r53KeyID, r53Secret)), 0o600)
	return &awsCLI{bin: bin, endpoint: "http://" + endpoint, dir: dir, env: []string{
		"HOME=" + dir, "AWS_CONFIG_FILE=" + cfg, "AWS_SHARED_CREDENTIALS_FILE=" + creds, "AWS_PROFILE=healthroute-test",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=", "PATH=/usr/bin:/bin"}}
}

// run runs `aws route53 ARGS... --endpoint-url ...` and returns its output and error.
func (a *awsCLI) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(a.bin, append(append([]string{"route53"}, args...), "--endpoint-url", a.endpoint, "--cli-read-timeout", "20")...)
	cmd.Env = a.env
	cmd.Dir = a.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// json runs the command and decodes its JSON output into v.
func (a *awsCLI) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out, err := a.run(t, args...)
	if err != nil {
		t.Fatalf("aws route53 %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("aws route53 %s: %v\n%s", args[0], err, out)
	}
}

// batchFile writes a change batch into the CLI's directory and returns file://PATH.
func (a *awsCLI) batchFile(t *testing.T, name, batch string) string {
	t.Helper()
	path := filepath.Join(a.dir, name)
	if err := os.WriteFile(path, []byte(batch), 0o600); err != nil {
		t.Fatal(err)
	}
	return "file://" + path
}

type cliChange struct {
	ChangeInfo struct{ Id, Status string }
}

// waitCLIInSync runs get-change until the change is INSYNC.
func (a *awsCLI) waitInSync(t *testing.T, id string) {
	t.Helper()
	var last string
	waitUntil(t, 20*time.Second, "change "+id+" INSYNC (aws route53 get-change)", func() bool {
		out, err := a.run(t, "get-change", "--id", id)
		last = out
		var c cliChange
		return err == nil && json.Unmarshal([]byte(out), &c) == nil && c.ChangeInfo.Status == "INSYNC"
	}, func() string { return last })
}

// TestRoute53APIWithTheAWSCLI drives the API with the aws CLI: health checks,
// weighted and failover record sets using them, INSYNC, DNS answering as Route 53
// would, UPSERT and DELETE, and a bad batch refused whole with InvalidChangeBatch.
func TestRoute53APIWithTheAWSCLI(t *testing.T) {
	s := startR53(t, "")
	aws := newAWSCLI(t, s.api)
	up, down := healthyEndpoint(t), downEndpoint(t)
	check := func(ref, hostPort string) string {
		host, port, _ := strings.Cut(hostPort, ":")
		var out struct{ HealthCheck struct{ Id string } }
		aws.json(t, &out, "create-health-check", "--caller-reference", ref, "--health-check-config",
			fmt.Sprintf("Type=HTTP,IPAddress=%s,Port=%s,ResourcePath=/health,RequestInterval=10,FailureThreshold=1", host, port))
		return out.HealthCheck.Id
	}
	upID, downID := check("cli-up", up), check("cli-down", down)

	var ch cliChange
	aws.json(t, &ch, "change-resource-record-sets", "--hosted-zone-id", s.zoneID, "--change-batch", aws.batchFile(t, "create.json", fmt.Sprintf(`{
  "Comment": "weighted and failover",
  "Changes": [
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "w.example.org", "Type": "A", "SetIdentifier": "one", "Weight": 10, "TTL": 30,
      "ResourceRecords": [{"Value": "192.0.2.1"}], "HealthCheckId": %q}},
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "w.example.org", "Type": "A", "SetIdentifier": "two", "Weight": 10, "TTL": 30,
      "ResourceRecords": [{"Value": "192.0.2.2"}], "HealthCheckId": %q}},
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "f.example.org", "Type": "A", "SetIdentifier": "p", "Failover": "PRIMARY", "TTL": 30,
      "ResourceRecords": [{"Value": "192.0.2.10"}], "HealthCheckId": %q}},
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "f.example.org", "Type": "A", "SetIdentifier": "s", "Failover": "SECONDARY", "TTL": 30,
      "ResourceRecords": [{"Value": "192.0.2.20"}]}}
  ]}`, upID, downID, downID)))
	aws.waitInSync(t, ch.ChangeInfo.Id)
	s.srv.WaitFor(t, "w.example.org", dns.TypeA, 15*time.Second, "weighted: the healthy member only", func(m *dns.Msg) bool {
		return slices.Equal(answersA(m), []string{"192.0.2.1"})
	})
	s.srv.WaitFor(t, "f.example.org", dns.TypeA, 15*time.Second, "failover: the secondary", func(m *dns.Msg) bool {
		return slices.Equal(answersA(m), []string{"192.0.2.20"})
	})

	var list struct {
		ResourceRecordSets []struct{ Name, SetIdentifier string }
	}
	aws.json(t, &list, "list-resource-record-sets", "--hosted-zone-id", s.zoneID)
	if len(list.ResourceRecordSets) != 5 || list.ResourceRecordSets[0].Name != "example.org." || list.ResourceRecordSets[1].Name != "f.example.org." {
		t.Errorf("list-resource-record-sets: %+v, want the SOA and the 4 record sets, f.example.org. first", list.ResourceRecordSets)
	}

	out, err := aws.run(t, "change-resource-record-sets", "--hosted-zone-id", s.zoneID, "--change-batch", aws.batchFile(t, "bad.json", `{"Changes": [
    {"Action": "CREATE", "ResourceRecordSet": {"Name": "new.example.org", "Type": "A", "TTL": 30, "ResourceRecords": [{"Value": "192.0.2.30"}]}},
    {"Action": "DELETE", "ResourceRecordSet": {"Name": "missing.example.org", "Type": "A", "TTL": 30, "ResourceRecords": [{"Value": "192.0.2.31"}]}}]}`))
	if err == nil || !strings.Contains(out, "InvalidChangeBatch") || !strings.Contains(out, "but it was not found") {
		t.Errorf("a bad batch: %v\n%s\nwant InvalidChangeBatch naming the missing record set", err, out)
	}
	if m := s.srv.Query(t, "new.example.org", dns.TypeA); m.Rcode != dns.RcodeNameError {
		t.Errorf("new.example.org answers %s after its batch was refused, want NXDOMAIN", dns.RcodeToString[m.Rcode])
	}

	aws.json(t, &ch, "change-resource-record-sets", "--hosted-zone-id", s.zoneID, "--change-batch", aws.batchFile(t, "upsert.json", fmt.Sprintf(`{"Changes": [
    {"Action": "UPSERT", "ResourceRecordSet": {"Name": "f.example.org", "Type": "A", "SetIdentifier": "p", "Failover": "PRIMARY", "TTL": 30,
      "ResourceRecords": [{"Value": "192.0.2.11"}], "HealthCheckId": %q}},
    {"Action": "DELETE", "ResourceRecordSet": {"Name": "w.example.org", "Type": "A", "SetIdentifier": "two", "Weight": 10, "TTL": 30,
      "ResourceRecords": [{"Value": "192.0.2.2"}], "HealthCheckId": %q}}]}`, upID, downID)))
	aws.waitInSync(t, ch.ChangeInfo.Id)
	s.srv.WaitFor(t, "f.example.org", dns.TypeA, 15*time.Second, "the upserted primary", func(m *dns.Msg) bool {
		return slices.Equal(answersA(m), []string{"192.0.2.11"})
	})
	aws.json(t, &list, "list-resource-record-sets", "--hosted-zone-id", s.zoneID)
	if len(list.ResourceRecordSets) != 4 {
		t.Errorf("after the UPSERT and DELETE: %+v, want the SOA and 3 record sets", list.ResourceRecordSets)
	}
	var status struct{ HealthCheckObservations []struct{ Region string } }
	aws.json(t, &status, "get-health-check-status", "--health-check-id", upID)
	if len(status.HealthCheckObservations) != 1 {
		t.Errorf("get-health-check-status: %+v, want this member's observation", status)
	}
}
