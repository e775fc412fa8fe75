package test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/miekg/dns"
)

// r53Error is Route 53's error document.
type r53Error struct {
	XMLName  xml.Name `xml:"ErrorResponse"`
	Code     string   `xml:"Error>Code"`
	Message  string   `xml:"Error>Message"`
	Messages []string `xml:"Messages>Message"`
}

// signedRequest builds a request to the API at s, signed with keyID and secret
// at the time at by the SDK's own SigV4 signer.
func signedRequest(t *testing.T, s *r53Server, method, path, body, keyID, secret string, at time.Time) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.api+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret},
		req, hex.EncodeToString(sum[:]), "route53", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// send sends req and returns the status and the error document (empty on success).
func send(t *testing.T, req *http.Request) (int, r53Error, string) {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e r53Error
	if resp.StatusCode >= 300 {
		if err := xml.Unmarshal(b, &e); err != nil && !strings.Contains(string(b), "<InvalidChangeBatch") {
			t.Errorf("%s %s: %d with a body that is not Route 53's error XML: %v\n%s", req.Method, req.URL.Path, resp.StatusCode, err, b)
		}
	}
	return resp.StatusCode, e, string(b)
}

// TestRoute53APIRefusesBadRequests sends what Route 53 refuses: each is refused
// with Route 53's status and error code, nothing of it applies and DNS answers
// as before.
func TestRoute53APIRefusesBadRequests(t *testing.T) {
	s := startR53(t, "")
	waitInSync(t, s.client, s.change(t, create(aSet("a.example.org", "192.0.2.1", "", nil))))
	zonePath := "/2013-04-01/hostedzone/" + s.zoneID + "/rrset/"
	batch := `<?xml version="1.0" encoding="UTF-8"?><ChangeResourceRecordSetsRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeBatch><Changes><Change><Action>CREATE</Action><ResourceRecordSet><Name>new.example.org</Name><Type>A</Type><TTL>60</TTL><ResourceRecords><ResourceRecord><Value>192.0.2.50</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`
	now := time.Now()

	unsigned, _ := http.NewRequest("POST", "http://"+s.api+zonePath, strings.NewReader(batch))
	tampered := signedRequest(t, s, "POST", zonePath, batch, r53KeyID, r53Secret, now)
	tampered.Body = io.NopCloser(strings.NewReader(strings.Replace(batch, "192.0.2.50", "192.0.2.51", 1)))
	big := strings.Replace(batch, "<Name>", "<!--"+strings.Repeat("x", 1<<20)+"--><Name>", 1)

	cases := []struct {
		name   string
		req    *http.Request
		status int
		code   string
	}{
		{"unsigned", unsigned, 403, "MissingAuthenticationToken"},
		{"unknown key", signedRequest(t, s, "POST", zonePath, batch, "AKIAUNKNOWNKEY000000", r53Secret, now), 403, "InvalidClientTokenId"},
		{"wrong secret", signedRequest(t, s, "POST", zonePath, batch, r53KeyID, r53Secret+"x", now), 403, "SignatureDoesNotMatch"},
		{"body changed after signing", tampered, 403, "SignatureDoesNotMatch"},
		{"expired date", signedRequest(t, s, "POST", zonePath, batch, r53KeyID, r53Secret, now.Add(-6*time.Minute)), 403, "SignatureDoesNotMatch"},
		{"date in the future", signedRequest(t, s, "POST", zonePath, batch, r53KeyID, r53Secret, now.Add(6*time.Minute)), 403, "SignatureDoesNotMatch"},
		{"oversized body", signedRequest(t, s, "POST", zonePath, big, r53KeyID, r53Secret, now), 413, "InvalidInput"},
		{"malformed XML", signedRequest(t, s, "POST", zonePath, batch[:len(batch)-40], r53KeyID, r53Secret, now), 400, "InvalidInput"},
		{"unknown action", signedRequest(t, s, "POST", "/2013-04-01/hostedzone/"+s.zoneID+"/dnssec/enable", "", r53KeyID, r53Secret, now), 400, "InvalidAction"},
		{"unknown zone", signedRequest(t, s, "POST", "/2013-04-01/hostedzone/ZNOSUCHZONE/rrset/", batch, r53KeyID, r53Secret, now), 404, "NoSuchHostedZone"},
		{"bad action in a batch", signedRequest(t, s, "POST", zonePath, strings.Replace(batch, "CREATE", "MERGE", 1), r53KeyID, r53Secret, now), 400, "InvalidInput"},
	}
	for _, c := range cases {
		code, e, body := send(t, c.req)
		if code != c.status || e.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s\n%s", c.name, code, e.Code, c.status, c.code, body)
		}
	}
	list, err := s.client.ListResourceRecordSets(context.Background(), &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(s.zoneID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.ResourceRecordSets) != 2 {
		t.Errorf("after the refused requests the zone holds %d record sets, want 2 (the SOA and a.example.org.)", len(list.ResourceRecordSets))
	}
	if m := s.srv.Query(t, "new.example.org", dns.TypeA); m.Rcode != dns.RcodeNameError {
		t.Errorf("new.example.org answers %s, want NXDOMAIN: a refused request applied", dns.RcodeToString[m.Rcode])
	}
	if got := answersA(s.srv.Query(t, "a.example.org", dns.TypeA)); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("a.example.org answers %v after the refused requests, want 192.0.2.1", got)
	}
}

// TestRoute53APIKeysRotateWithoutReload replaces the access key file while the
// server runs: the new key signs at once, the old one is refused.
func TestRoute53APIKeysRotateWithoutReload(t *testing.T) {
	s := startR53(t, "")
	ctx := context.Background()
	if _, err := s.client.ListHostedZones(ctx, &route53.ListHostedZonesInput{}); err != nil {
		t.Fatalf("with the first key: %v", err)
	}
	keyFile := filepath.Join(filepath.Dir(s.dataDir), "route53.keys")
	tmp := keyFile + ".new"
	if err := os.WriteFile(tmp, []byte("AKIAROTATEDKEY000001 rotated-secret-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, keyFile); err != nil {
		t.Fatal(err)
	}
	rotated := r53Client(s.api, "AKIAROTATEDKEY000001", "rotated-secret-0123456789abcdef")
	out, err := rotated.ListHostedZones(ctx, &route53.ListHostedZonesInput{})
	if err != nil {
		t.Fatalf("with the rotated key: %v", err)
	}
	if len(out.HostedZones) != 1 || aws.ToString(out.HostedZones[0].Name) != "example.org." {
		t.Errorf("hosted zones %+v, want example.org. alone", out.HostedZones)
	}
	if _, err := s.client.ListHostedZones(ctx, &route53.ListHostedZonesInput{}); apiCode(err) != "InvalidClientTokenId" {
		t.Errorf("with the removed key: %v, want InvalidClientTokenId", err)
	}
}
