package r53api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/internal/coretest"
)

const (
	testKeyID  = "AKIATESTKEY000000001"
	testSecret = "test-secret-0123456789abcdefghij"
)

// startTest starts the API on loopback over a real single-voter node in a
// temporary data directory, serving zones, and returns an SDK client for it.
func startTest(t testing.TB, lim Limits, zones ...Zone) (*Server, *route53.Client) {
	t.Helper()
	return startBackend(t, lim, Backend{Zones: func() []Zone { return zones }})
}

// startBackend is startTest with be's zones and lookups; its Node is the test's.
func startBackend(t testing.TB, lim Limits, be Backend) (*Server, *route53.Client) {
	t.Helper()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(testKeyID+" "+testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := control.Open(control.Config{Name: "local", Dir: filepath.Join(dir, "state")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	coretest.WaitUntil(t, 10*time.Second, "the node leads", func() bool { return n.Status().CanChange }, func() string { return n.Status().State })
	be.Node = func() *control.Node { return n }
	s, err := Start("127.0.0.1:0", keys, lim, be)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(testKeyID, testSecret, ""),
		HTTPClient: &http.Client{Timeout: 10 * time.Second}}
	c := route53.NewFromConfig(cfg, func(o *route53.Options) {
		o.BaseEndpoint = aws.String("http://" + s.Addr())
		o.RetryMaxAttempts = 1 // a refusal is what the tests look at, not a retry's outcome
	})
	return s, c
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestHostedZoneListings(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org."}, Zone{Name: "a.example.org."}, Zone{Name: "example.com."})
	ctx := context.Background()
	out, err := c.ListHostedZones(ctx, &route53.ListHostedZonesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, z := range out.HostedZones {
		names = append(names, aws.ToString(z.Name))
	}
	if strings.Join(names, " ") != "example.com. example.org. a.example.org." {
		t.Errorf("zones %v, want Route 53's order (labels reversed): example.com. example.org. a.example.org.", names)
	}
	by, err := c.ListHostedZonesByName(ctx, &route53.ListHostedZonesByNameInput{DNSName: aws.String("example.org"), MaxItems: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(by.HostedZones) != 1 || aws.ToString(by.HostedZones[0].Name) != "example.org." || !by.IsTruncated || aws.ToString(by.NextDNSName) != "a.example.org." {
		t.Errorf("by name from example.org, 1 item: %+v", by)
	}
	z, err := c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: out.HostedZones[1].Id})
	if err != nil || aws.ToString(z.HostedZone.Name) != "example.org." {
		t.Errorf("GetHostedZone(%s): %v, %v", aws.ToString(out.HostedZones[1].Id), z, err)
	}
	if n, err := c.GetHostedZoneCount(ctx, &route53.GetHostedZoneCountInput{}); err != nil || aws.ToInt64(n.HostedZoneCount) != 3 {
		t.Errorf("GetHostedZoneCount: %v, %v; want 3", n, err)
	}
	if _, err := c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String("ZNOPE")}); code(err) != "NoSuchHostedZone" {
		t.Errorf("an unknown zone: %v, want NoSuchHostedZone", err)
	}
}

func TestHealthChecksAndTags(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	cfg := &types.HealthCheckConfig{Type: types.HealthCheckTypeHttps, FullyQualifiedDomainName: aws.String("app.example.net"),
		ResourcePath: aws.String("/health"), RequestInterval: aws.Int32(30), FailureThreshold: aws.Int32(3)}
	created, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("r1"), HealthCheckConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	id := created.HealthCheck.Id
	again, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("r1"), HealthCheckConfig: cfg})
	if err != nil || aws.ToString(again.HealthCheck.Id) != aws.ToString(id) {
		t.Errorf("the same request again: %v, %v; want the same check back", again, err)
	}
	cfg2 := *cfg
	cfg2.ResourcePath = aws.String("/other")
	if _, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("r1"), HealthCheckConfig: &cfg2}); code(err) != "HealthCheckAlreadyExists" {
		t.Errorf("the caller reference with another config: %v, want HealthCheckAlreadyExists", err)
	}
	if _, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("r2"),
		HealthCheckConfig: &types.HealthCheckConfig{Type: types.HealthCheckTypeTcp, IPAddress: aws.String("192.0.2.1")}}); code(err) != "InvalidInput" {
		t.Errorf("a TCP check without a port (the importer refuses it): %v, want InvalidInput", err)
	}
	up, err := c.UpdateHealthCheck(ctx, &route53.UpdateHealthCheckInput{HealthCheckId: id, HealthCheckVersion: aws.Int64(1), ResourcePath: aws.String("/ready"), Inverted: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if h := up.HealthCheck; aws.ToInt64(h.HealthCheckVersion) != 2 || aws.ToString(h.HealthCheckConfig.ResourcePath) != "/ready" || !aws.ToBool(h.HealthCheckConfig.Inverted) ||
		aws.ToString(h.HealthCheckConfig.FullyQualifiedDomainName) != "app.example.net" {
		t.Errorf("after the update: %+v", h.HealthCheckConfig)
	}
	if _, err := c.UpdateHealthCheck(ctx, &route53.UpdateHealthCheckInput{HealthCheckId: id, HealthCheckVersion: aws.Int64(1), Disabled: aws.Bool(true)}); code(err) != "HealthCheckVersionMismatch" {
		t.Errorf("an update at version 1 of version 2: %v, want HealthCheckVersionMismatch", err)
	}
	if _, err := c.ChangeTagsForResource(ctx, &route53.ChangeTagsForResourceInput{ResourceId: id, ResourceType: types.TagResourceTypeHealthcheck,
		AddTags: []types.Tag{{Key: aws.String("Name"), Value: aws.String("app")}, {Key: aws.String("team"), Value: aws.String("dns")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ChangeTagsForResource(ctx, &route53.ChangeTagsForResourceInput{ResourceId: id, ResourceType: types.TagResourceTypeHealthcheck, RemoveTagKeys: []string{"team"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := c.ListTagsForResource(ctx, &route53.ListTagsForResourceInput{ResourceId: id, ResourceType: types.TagResourceTypeHealthcheck})
	if err != nil {
		t.Fatal(err)
	}
	if ts := tags.ResourceTagSet.Tags; len(ts) != 1 || aws.ToString(ts[0].Key) != "Name" || aws.ToString(ts[0].Value) != "app" {
		t.Errorf("tags %+v, want Name=app alone", ts)
	}
	list, err := c.ListHealthChecks(ctx, &route53.ListHealthChecksInput{})
	if err != nil || len(list.HealthChecks) != 1 {
		t.Fatalf("ListHealthChecks: %v, %v", list, err)
	}
	if n, err := c.GetHealthCheckCount(ctx, &route53.GetHealthCheckCountInput{}); err != nil || aws.ToInt64(n.HealthCheckCount) != 1 {
		t.Errorf("GetHealthCheckCount: %v, %v; want 1", n, err)
	}
	if _, err := c.DeleteHealthCheck(ctx, &route53.DeleteHealthCheckInput{HealthCheckId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetHealthCheck(ctx, &route53.GetHealthCheckInput{HealthCheckId: id}); code(err) != "NoSuchHealthCheck" {
		t.Errorf("the deleted check: %v, want NoSuchHealthCheck", err)
	}
}

func TestBatchTheImporterRefusesIsRefused(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org.", Corefile: map[string]string{"static.example.org.": "Corefile:7"}})
	ctx := context.Background()
	cname := &types.ResourceRecordSet{Name: aws.String("x.example.org"), Type: types.RRTypeCname, TTL: aws.Int64(60),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String("y.example.net")}}}
	a := &types.ResourceRecordSet{Name: aws.String("x.example.org"), Type: types.RRTypeA, TTL: aws.Int64(60),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}}
	_, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org")),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: cname}, {Action: types.ChangeActionCreate, ResourceRecordSet: a}}}})
	var icb *types.InvalidChangeBatch
	if !errors.As(err, &icb) || !strings.Contains(icb.ErrorMessage(), "CNAME") {
		t.Errorf("a CNAME beside an A record: %v, want InvalidChangeBatch naming the CNAME", err)
	}
	a.Name = aws.String("static.example.org")
	_, err = c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org")),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: a}}}})
	if !errors.As(err, &icb) || !strings.Contains(icb.ErrorMessage(), "defined in the Corefile (Corefile:7)") {
		t.Errorf("an UPSERT of a Corefile name: %v, want InvalidChangeBatch naming where the Corefile defines it", err)
	}
}

// TestPaceAtTheDefaults sends requests faster than the default pace (10 a second,
// 50 at once) allows: the first 50 pass, and later ones are refused with
// Throttling until the pace lets them through.
func TestPaceAtTheDefaults(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	throttled := 0
	for i := range 100 {
		_, err := c.ListHostedZones(ctx, &route53.ListHostedZonesInput{})
		switch {
		case err == nil:
		case code(err) == "Throttling":
			throttled++
			if i < DefaultLimits.Burst {
				t.Fatalf("request %d throttled, within the burst of %d", i+1, DefaultLimits.Burst)
			}
		default:
			t.Fatal(err)
		}
	}
	if throttled == 0 || s.throttled.Load() != uint64(throttled) {
		t.Errorf("%d of 100 requests throttled (server counted %d), want some", throttled, s.throttled.Load())
	}
}

func TestReadKeysSaysWhere(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"AKIA1 secretsecretsecret1\nAKIA2\n":                     "keys:2: a line of 1 fields",
		"AKIA1 short\n":                                          "keys:1: the secret of AKIA1 has 5 characters, expected at least 16",
		"AKIA1 secretsecretsecret1\nAKIA1 secretsecretsecret2\n": "keys:2: access key AKIA1 is given twice",
		"# only a comment\n":                                     "holds no access key",
		"AKIA1 secretsecretsecret1\nAKIA2 secretsecretsecret1\n": "keys:2: access key AKIA2 has the secret of AKIA1",
	} {
		path := filepath.Join(dir, "keys")
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := ReadKeys(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadKeys(%q): %v, want %q", content, err, want)
		}
	}
}

// TestSignaturesOverEscapedQueries signs requests whose query values need
// escaping (a wildcard name, Route 53's \052 form, spaces): SigV4's canonical
// query must match the SDK's.
func TestSignaturesOverEscapedQueries(t *testing.T) {
	_, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	for _, name := range []string{`*.example.org`, `\052.example.org.`, "a b+c/d=e&f.example.org", "ü.example.org"} {
		if _, err := c.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org.")),
			StartRecordName: aws.String(name), StartRecordType: types.RRTypeTxt}); err != nil {
			t.Errorf("listing from %q: %v", name, err)
		}
		if _, err := c.ListHostedZonesByName(ctx, &route53.ListHostedZonesByNameInput{DNSName: aws.String(name)}); err != nil {
			t.Errorf("zones by name from %q: %v", name, err)
		}
	}
}

// TestIdleConnectionFloodLocksNoOneOut: a client holding every connection slot of
// the listener with connections that send nothing, at the default limit and past
// it, does not keep another client's request from an answer: its idle connections
// are closed to make room (a listener that only caps the total, by not accepting,
// left the request waiting until the flood's connections timed out).
func TestIdleConnectionFloodLocksNoOneOut(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	for i := range DefaultLimits.MaxConns + 8 {
		conn, err := d.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // well under the flood's 10 s header timeout
	defer cancel()
	if _, err := c.ListHostedZones(ctx, &route53.ListHostedZonesInput{}); err != nil {
		t.Fatalf("a request beside a flood of idle connections: %v", err)
	}
}
