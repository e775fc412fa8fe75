package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// botocoreBurst is a Python program that sends 200 requests at once (8 threads:
// a change batch every fourth, listings else) through botocore, as the aws CLI
// ships it, with its standard retry mode, and prints what each ended with.
const botocoreBurst = `
import json, sys, threading
from awscli.botocore.session import get_session
from awscli.botocore.config import Config
endpoint, key, secret, zone = sys.argv[1:5]
outcomes, retried, lock = {}, [0], threading.Lock()
def note(outcome, meta):
    with lock:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        retried[0] += meta.get("RetryAttempts", 0)
def work(k):
    c = get_session().create_client("route53", region_name="us-east-1", endpoint_url=endpoint, aws_access_key_id=key,
        aws_secret_access_key=secret, config=Config(retries={"mode": "standard", "max_attempts": 3}))
    for i in range(k, 200, 8):
        try:
            if i % 4 == 0:
                r = c.change_resource_record_sets(HostedZoneId=zone, ChangeBatch={"Changes": [{"Action": "UPSERT", "ResourceRecordSet": {
                    "Name": "r%d.example.org" % i, "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": "192.0.2.1"}]}}]})
                note("applied", r["ResponseMetadata"])
            else:
                note("ok", c.list_hosted_zones()["ResponseMetadata"])
        except Exception as e: # a ClientError, of whichever botocore module raised it
            r = getattr(e, "response", None)
            if r and "Error" in r:
                note(r["Error"].get("Code", ""), r.get("ResponseMetadata", {}))
            else:
                note(type(e).__name__ + ": " + str(e), {})
threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"outcomes": outcomes, "retried": retried[0]}))
`

// TestRoute53APIBotocoreRetriesPastThePace sends 200 botocore requests at once
// to an API paced at 5 a second: throttled requests are retried by botocore
// (within the same second, so with the same signature) and end applied or
// throttled, never refused as a replay (SignatureDoesNotMatch, InvalidInput);
// each change that answered applied is in the zone.
func TestRoute53APIBotocoreRetriesPastThePace(t *testing.T) {
	s := startR53API(t, "rate 5\nburst 5", "")
	prog := filepath.Join(t.TempDir(), "burst.py")
	if err := os.WriteFile(prog, []byte(botocoreBurst), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", prog, "http://"+s.api, r53KeyID, r53Secret, s.zoneID)
	cmd.Env = []string{"HOME=" + t.TempDir(), "AWS_EC2_METADATA_DISABLED=true", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("botocore (Debian's aws CLI's, /usr/lib/python3/dist-packages/awscli): %v\n%s", err, out)
	}
	var got struct {
		Outcomes map[string]int
		Retried  int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("200 requests: %v, %d retries", got.Outcomes, got.Retried)
	for o, n := range got.Outcomes {
		if o != "ok" && o != "applied" && o != "Throttling" {
			t.Errorf("%d requests ended with %s, want each applied, answered or throttled", n, o)
		}
	}
	if got.Retried == 0 || got.Outcomes["applied"] == 0 {
		t.Errorf("no request retried, or none applied: the pace did not bite or nothing passed it")
	}
	var applied int
	list, err := s.client.ListResourceRecordSets(context.Background(), &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID)})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range list.ResourceRecordSets {
		if strings.HasPrefix(aws.ToString(rs.Name), "r") {
			applied++
		}
	}
	if applied != got.Outcomes["applied"] {
		t.Errorf("%d change record sets in the zone, %d changes answered applied", applied, got.Outcomes["applied"])
	}
}

// TestRoute53APIIdenticalCLIListings runs four `aws route53 list-hosted-zones`
// at once (identical requests, signed within the same second when they start
// together): all succeed.
func TestRoute53APIIdenticalCLIListings(t *testing.T) {
	s := startR53(t, "")
	cli := newAWSCLI(t, s.api)
	var wg sync.WaitGroup
	outs, errs := make([]string, 4), make([]error, 4)
	for i := range 4 {
		wg.Go(func() { outs[i], errs[i] = cli.run(t, "list-hosted-zones") })
	}
	wg.Wait()
	for i := range 4 {
		if errs[i] != nil || !strings.Contains(outs[i], "example.org.") {
			t.Errorf("list-hosted-zones %d of 4 at once: %v\n%s", i+1, errs[i], outs[i])
		}
	}
}

// TestRoute53APICapturedChangeReplayedInTheFleet captures two signed changes
// sent to member 0 (a batch and a tag change), makes later changes to the same
// names, then sends the captured requests again to the other members, and to a
// member after every member restarted: none undoes the later change.
func TestRoute53APICapturedChangeReplayedInTheFleet(t *testing.T) {
	f := newR53Fleet(t)
	f.startAll(t)
	zone := r53api.ZoneID("example.org.")
	ctx := context.Background()
	var err error
	c0 := r53Client(f.apis[0], r53KeyID, r53Secret)
	waitUntil(t, 20*time.Second, "the fleet accepts a change (a leader elected)", func() bool {
		_, err = c0.ChangeTagsForResource(ctx, &route53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone,
			ResourceId: aws.String(zone), AddTags: []types.Tag{{Key: aws.String("fleet"), Value: aws.String("three")}}})
		return err == nil
	}, func() string { return fmt.Sprint(err) })

	at := time.Now()
	rrset := "/2013-04-01/hostedzone/" + zone + "/rrset/"
	tagPath := "/2013-04-01/tags/hostedzone/" + zone
	batch := `<?xml version="1.0" encoding="UTF-8"?><ChangeResourceRecordSetsRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeBatch><Changes><Change><Action>UPSERT</Action><ResourceRecordSet><Name>x.example.org</Name><Type>A</Type><TTL>60</TTL><ResourceRecords><ResourceRecord><Value>192.0.2.1</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`
	tags := `<?xml version="1.0" encoding="UTF-8"?><ChangeTagsForResourceRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><AddTags><Tag><Key>owner</Key><Value>first</Value></Tag></AddTags></ChangeTagsForResourceRequest>`
	member0 := &r53Server{api: f.apis[0]}
	// captured returns the captured request (the same bytes: the same signature),
	// sent to the API at addr.
	captured := func(path, body, addr string) (int, r53Error, string) {
		req := signedRequest(t, member0, "POST", path, body, r53KeyID, r53Secret, at)
		req.URL.Host = addr
		return send(t, req)
	}
	if code, _, body := captured(rrset, batch, f.apis[0]); code != 200 {
		t.Fatalf("the batch: %d %s", code, body)
	}
	if code, _, body := captured(tagPath, tags, f.apis[0]); code != 200 {
		t.Fatalf("the tags: %d %s", code, body)
	}
	later, err := c0.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: aSet("x.example.org", "192.0.2.2", "", nil)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c0.ChangeTagsForResource(ctx, &route53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone,
		ResourceId: aws.String(zone), AddTags: []types.Tag{{Key: aws.String("owner"), Value: aws.String("later")}}}); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, c0, aws.ToString(later.ChangeInfo.Id))
	// The tag change came after the batch INSYNC waited for: the last member reads
	// its own copy, which has it within the documented second.
	owner := func() string {
		last := r53Client(f.apis[len(f.apis)-1], r53KeyID, r53Secret) // its address changes at a restart
		out, err := last.ListTagsForResource(ctx, &route53.ListTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone, ResourceId: aws.String(zone)})
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range out.ResourceTagSet.Tags {
			if aws.ToString(tg.Key) == "owner" {
				return aws.ToString(tg.Value)
			}
		}
		return ""
	}
	waitUntil(t, 5*time.Second, "the last member lists owner=later", func() bool { return owner() == "later" }, func() string { return "" })

	holds := func(when string) {
		t.Helper()
		for i, s := range f.srvs {
			if got := answersA(s.Query(t, "x.example.org", dns.TypeA)); !slices.Equal(got, []string{"192.0.2.2"}) {
				t.Errorf("%s: member %d answers %v for x.example.org, want the later change's 192.0.2.2", when, i, got)
			}
		}
		if got := owner(); got != "later" {
			t.Errorf("%s: tag owner=%s, want the later change's owner=later", when, got)
		}
	}
	replay := func(when string, addr string) {
		t.Helper()
		if code, _, body := captured(rrset, batch, addr); code != 200 && code != 400 {
			t.Errorf("%s: the captured batch: %d %s, want its first answer (200) or a refusal (400)", when, code, body)
		}
		if code, e, body := captured(tagPath, tags, addr); code != 400 || e.Code != "InvalidInput" {
			t.Errorf("%s: the captured tag change: %d %s, want 400 InvalidInput (decided before)", when, code, body)
		}
	}
	replay("sent again to member 1", f.apis[1])
	replay("sent again to member 2", f.apis[2])
	holds("after the captured changes were sent again to members 1 and 2")

	for _, s := range f.srvs {
		s.Stop()
	}
	f.startAll(t)
	replay("sent again after a restart of every member", f.apis[0])
	holds("after the captured changes were sent again after a restart")
}

// TestRoute53APISlowBodiesLockNoSignedClientOut opens 72 connections that send a
// request's headers and then a byte of its body a second, from eight loopback
// addresses: a signed client's 20 requests are each answered within 3 s.
func TestRoute53APISlowBodiesLockNoSignedClientOut(t *testing.T) {
	s := startR53(t, "")
	coretest.SlowBodies(t, s.api, 72)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := s.client.ListHostedZones(ctx, &route53.ListHostedZonesInput{})
		cancel()
		if err != nil {
			t.Fatalf("signed request %d beside 72 slow bodies: %v", i+1, err)
		}
	}
}
