package r53api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/internal/coretest"
)

// signed builds a request to s signed with the test key at the time at, by the
// SDK's own signer: the same arguments give the same signature.
func signed(t *testing.T, addr, method, path, body string, at time.Time) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret},
		req, hex.EncodeToString(sum[:]), "route53", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	return req
}

// to sends req, as captured, to the listener at addr.
func to(req *http.Request, addr string) *http.Request {
	req.URL.Host = addr
	return req
}

// answer sends req and returns the status, the error code ("" on success) and the body.
func answer(t *testing.T, req *http.Request) (int, string, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e errorResponse
	if resp.StatusCode >= 300 {
		xml.Unmarshal(b, &e)
	}
	return resp.StatusCode, e.Error.Code, string(b)
}

func upsertBody(name, value string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><ChangeResourceRecordSetsRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeBatch><Changes><Change><Action>UPSERT</Action><ResourceRecordSet><Name>` +
		name + `</Name><Type>A</Type><TTL>60</TTL><ResourceRecords><ResourceRecord><Value>` + value + `</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`
}

// valueOf returns the value of name's A record set in the node's state.
func valueOf(s *Server, name string) string {
	for _, rs := range sortedSets(s.state(), "example.org.") {
		if rs.Name == name && len(rs.ResourceRecords) > 0 {
			return rs.ResourceRecords[0].Value
		}
	}
	return ""
}

// TestIdenticalReadsAllAnswered sends one signed listing four times at once and
// once more after: identical requests signed in the same second are the same
// request, and a read may be sent again while its signature is valid.
func TestIdenticalReadsAllAnswered(t *testing.T) {
	s, _ := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	at := time.Now()
	var wg sync.WaitGroup
	codes := make([]int, 5)
	for i := range 4 {
		wg.Go(func() { codes[i], _, _ = answer(t, signed(t, s.Addr(), "GET", "/2013-04-01/hostedzone", "", at)) })
	}
	wg.Wait()
	codes[4], _, _ = answer(t, signed(t, s.Addr(), "GET", "/2013-04-01/hostedzone", "", at))
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("identical listing %d: %d, want 200", i+1, c)
		}
	}
}

// TestThrottlingDecidedBeforeReplay: at a pace of one request at once, the same
// signed change sent again at once is throttled (a request SDKs retry), not
// refused as a replay; once the pace lets it through, it applies.
func TestThrottlingDecidedBeforeReplay(t *testing.T) {
	s, _ := startTest(t, Limits{MaxConns: 64, MaxBody: 1 << 20, Rate: 0.2, Burst: 1, Timeout: 10 * time.Second}, Zone{Name: "example.org."})
	at := time.Now()
	path := "/2013-04-01/hostedzone/" + ZoneID("example.org.") + "/rrset/"
	// One request every 5 s: the change must come before the listing's token is
	// back, however slowly a loaded machine sends it.
	if c, _, body := answer(t, signed(t, s.Addr(), "GET", "/2013-04-01/hostedzone", "", at)); c != http.StatusOK {
		t.Fatalf("a listing: %d %s", c, body)
	}
	body := upsertBody("a.example.org.", "192.0.2.1")
	if c, code, _ := answer(t, signed(t, s.Addr(), "POST", path, body, at)); code != "Throttling" {
		t.Fatalf("a change past the pace: %d %s, want Throttling", c, code)
	}
	var last string
	coretest.WaitUntil(t, 15*time.Second, "the throttled change, sent again with its signature, applies", func() bool {
		c, code, b := answer(t, signed(t, s.Addr(), "POST", path, body, at))
		last = code + " " + b
		if code == "SignatureDoesNotMatch" || code == "InvalidInput" {
			t.Fatalf("the throttled change sent again: %d %s", c, b)
		}
		return c == http.StatusOK
	}, func() string { return last })
	if v := valueOf(s, "a.example.org."); v != "192.0.2.1" {
		t.Errorf("a.example.org. holds %q, want 192.0.2.1", v)
	}
}

// TestChangeSentAgainChangesNothing: a signed change batch sent again after it
// applied (as an SDK does when it lost the answer) answers the change it made,
// and after a later change it does not undo that change.
func TestChangeSentAgainChangesNothing(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	at := time.Now()
	path := "/2013-04-01/hostedzone/" + ZoneID("example.org.") + "/rrset/"
	first := upsertBody("a.example.org.", "192.0.2.1")
	code, _, b1 := answer(t, signed(t, s.Addr(), "POST", path, first, at))
	if code != http.StatusOK {
		t.Fatalf("the change: %d %s", code, b1)
	}
	code, _, b2 := answer(t, signed(t, s.Addr(), "POST", path, first, at))
	var r1, r2 changeResourceRecordSetsResponse
	xml.Unmarshal([]byte(b1), &r1)
	xml.Unmarshal([]byte(b2), &r2)
	if code != http.StatusOK || r1.ChangeInfo.Id == "" || r2.ChangeInfo.Id != r1.ChangeInfo.Id {
		t.Errorf("the change sent again: %d %s, want 200 with the first answer's change %s", code, b2, r1.ChangeInfo.Id)
	}
	if _, err := c.ChangeResourceRecordSets(context.Background(), &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(ZoneID("example.org.")),
		ChangeBatch: batchOf("UPSERT", "a.example.org.", "192.0.2.2")}); err != nil {
		t.Fatal(err)
	}
	answer(t, signed(t, s.Addr(), "POST", path, first, at))
	if v := valueOf(s, "a.example.org."); v != "192.0.2.2" {
		t.Errorf("after the first change was sent again past a later one, a.example.org. holds %q, want 192.0.2.2", v)
	}
	n := 0
	for _, ch := range s.state().Changes {
		if "/change/"+ch.ID == r1.ChangeInfo.Id {
			n++
		}
	}
	if n != 1 {
		t.Errorf("change %s recorded %d times, want once", r1.ChangeInfo.Id, n)
	}
}

// TestChangeRefusedAfterRestart: a signed change sent again to a member started
// anew on the same data directory (the replicated state remembers it) is
// refused, for a health check as for a batch's later change.
func TestChangeRefusedAfterRestart(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	writeFile(t, keys, testKeyID+" "+testSecret+"\n")
	open := func() (*Server, *control.Node) {
		n, err := control.Open(control.Config{Name: "local", Dir: filepath.Join(dir, "state")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		coretest.WaitUntil(t, 10*time.Second, "the node leads", func() bool { return n.Status().CanChange }, func() string { return n.Status().State })
		s, err := Start("127.0.0.1:0", keys, DefaultLimits, Backend{Node: func() *control.Node { return n }, Zones: func() []Zone { return []Zone{{Name: "example.org."}} }})
		if err != nil {
			t.Fatal(err)
		}
		return s, n
	}
	s, n := open()
	at := time.Now()
	path := "/2013-04-01/hostedzone/" + ZoneID("example.org.") + "/rrset/"
	first := upsertBody("a.example.org.", "192.0.2.1")
	if code, _, b := answer(t, signed(t, s.Addr(), "POST", path, first, at)); code != http.StatusOK {
		t.Fatalf("the change: %d %s", code, b)
	}
	tags := `<?xml version="1.0" encoding="UTF-8"?><ChangeTagsForResourceRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><AddTags><Tag><Key>team</Key><Value>dns</Value></Tag></AddTags></ChangeTagsForResourceRequest>`
	tagPath := "/2013-04-01/tags/hostedzone/" + ZoneID("example.org.")
	if code, _, b := answer(t, signed(t, s.Addr(), "POST", tagPath, tags, at)); code != http.StatusOK {
		t.Fatalf("the tags: %d %s", code, b)
	}
	later := upsertBody("a.example.org.", "192.0.2.2")
	if code, _, b := answer(t, signed(t, s.Addr(), "POST", path, later, at.Add(time.Second))); code != http.StatusOK {
		t.Fatalf("the later change: %d %s", code, b)
	}
	addr := s.Addr() // a captured request names the member it was sent to
	s.Close()
	n.Close()
	s, n = open()
	defer n.Close()
	defer s.Close()
	answer(t, to(signed(t, addr, "POST", path, first, at), s.Addr()))
	if v := valueOf(s, "a.example.org."); v != "192.0.2.2" {
		t.Errorf("after a restart and the first change sent again, a.example.org. holds %q, want 192.0.2.2", v)
	}
	if code, ec, b := answer(t, to(signed(t, addr, "POST", tagPath, tags, at), s.Addr())); code != http.StatusBadRequest || ec != "InvalidInput" || !strings.Contains(b, "decided before") {
		t.Errorf("the tag change sent again after a restart: %d %s %s, want 400 InvalidInput (decided before)", code, ec, b)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// batchOf is a batch of one change of an A record set of one value.
func batchOf(action types.ChangeAction, name, value string) *types.ChangeBatch {
	return &types.ChangeBatch{Changes: []types.Change{{Action: action, ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA,
		TTL: aws.Int64(60), ResourceRecords: []types.ResourceRecord{{Value: aws.String(value)}}}}}}
}

// TestRefusedBatchStaysRefused: a signed batch this member refused (a CNAME
// beside an A record set) sent again once the A record set is gone is still
// refused: its refusal is remembered in the replicated state.
func TestRefusedBatchStaysRefused(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	zone := aws.String(ZoneID("example.org."))
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone, ChangeBatch: batchOf(types.ChangeActionCreate, "x.example.org.", "192.0.2.1")}); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	path := "/2013-04-01/hostedzone/" + ZoneID("example.org.") + "/rrset/"
	cname := `<?xml version="1.0" encoding="UTF-8"?><ChangeResourceRecordSetsRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeBatch><Changes><Change><Action>CREATE</Action><ResourceRecordSet><Name>x.example.org.</Name><Type>CNAME</Type><TTL>60</TTL><ResourceRecords><ResourceRecord><Value>y.example.net.</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`
	if code, ec, b := answer(t, signed(t, s.Addr(), "POST", path, cname, at)); ec != "InvalidChangeBatch" {
		t.Fatalf("a CNAME beside an A record set: %d %s %s, want InvalidChangeBatch", code, ec, b)
	}
	if _, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: zone, ChangeBatch: batchOf(types.ChangeActionDelete, "x.example.org.", "192.0.2.1")}); err != nil {
		t.Fatal(err)
	}
	if code, ec, b := answer(t, signed(t, s.Addr(), "POST", path, cname, at)); code != http.StatusBadRequest || ec != "InvalidInput" {
		t.Errorf("the refused CNAME sent again once the A record set is gone: %d %s %s, want 400 InvalidInput (decided before)", code, ec, b)
	}
	if sets := sortedSets(s.state(), "example.org."); len(sets) != 0 {
		t.Errorf("the zone holds %v, want nothing", sets)
	}
}

// TestPolicyInstanceSentAgainChangesNothing: an instance call goes through the
// same path as a batch, so a signed CreateTrafficPolicyInstance sent again (as
// captured) is decided once: it makes no second instance, and a signed
// DeleteTrafficPolicyInstance sent again is refused as decided.
func TestPolicyInstanceSentAgainChangesNothing(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	ctx := context.Background()
	tp, err := c.CreateTrafficPolicy(ctx, &route53.CreateTrafficPolicyInput{Name: aws.String("site"), Document: aws.String(failoverDocument)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	body := `<?xml version="1.0" encoding="UTF-8"?><CreateTrafficPolicyInstanceRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><HostedZoneId>` +
		ZoneID("example.org.") + `</HostedZoneId><Name>www.example.org</Name><TTL>60</TTL><TrafficPolicyId>` + aws.ToString(tp.TrafficPolicy.Id) +
		`</TrafficPolicyId><TrafficPolicyVersion>1</TrafficPolicyVersion></CreateTrafficPolicyInstanceRequest>`
	if code, _, b := answer(t, signed(t, s.Addr(), "POST", "/2013-04-01/trafficpolicyinstance", body, at)); code != http.StatusCreated {
		t.Fatalf("the instance: %d %s", code, b)
	}
	if code, ec, b := answer(t, signed(t, s.Addr(), "POST", "/2013-04-01/trafficpolicyinstance", body, at)); code != http.StatusBadRequest || ec != "InvalidInput" {
		t.Errorf("the instance sent again: %d %s, want 400 InvalidInput", code, b)
	}
	if n := len(s.state().Instances); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
	var id string
	for id = range s.state().Instances {
	}
	del := signed(t, s.Addr(), "DELETE", "/2013-04-01/trafficpolicyinstance/"+id, "", at)
	if code, _, b := answer(t, del); code != http.StatusOK {
		t.Fatalf("the delete: %d %s", code, b)
	}
	// Sent again, the delete is refused as decided before (not judged afresh as
	// an instance that does not exist).
	if code, ec, b := answer(t, signed(t, s.Addr(), "DELETE", "/2013-04-01/trafficpolicyinstance/"+id, "", at)); code != http.StatusBadRequest || ec != "InvalidInput" {
		t.Errorf("the delete sent again: %d %s, want 400 InvalidInput", code, b)
	}
}
