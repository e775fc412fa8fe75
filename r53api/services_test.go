package r53api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// echoService answers the key and body it was handed.
type echoService struct{}

func (echoService) ServeAuthed(w http.ResponseWriter, r *http.Request, body []byte, key string) {
	json.NewEncoder(w).Encode(map[string]string{"key": key, "body": string(body), "target": r.Header.Get("X-Amz-Target")})
}

// signedPost posts body to url signed for service with key id and secret.
func signedPost(t *testing.T, url, service, id, secret string, body []byte) (int, map[string]string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "ToggleCustomerAPI.ListRoutingControls")
	sum := sha256.Sum256(body)
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: id, SecretAccessKey: secret},
		req, hex.EncodeToString(sum[:]), service, "us-east-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out map[string]string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s answered %d with %q, not JSON", service, res.StatusCode, b)
	}
	return res.StatusCode, out, res.Header
}

// TestOtherServicesAreAuthenticatedThenHandedOver: a request signed for an ARC
// service reaches its handler with the signer's key and the body; a bad
// signature, or a service without a handler, is answered in JSON.
func TestOtherServicesAreAuthenticatedThenHandedOver(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(testKeyID+" "+testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Start("127.0.0.1:0", keys, DefaultLimits, Backend{Services: map[string]AuthedHandler{"route53-recovery-cluster": echoService{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	url := "http://" + s.Addr() + "/"
	status, out, _ := signedPost(t, url, "route53-recovery-cluster", testKeyID, testSecret, []byte(`{"MaxResults":5}`))
	if status != 200 || out["key"] != testKeyID || out["body"] != `{"MaxResults":5}` || out["target"] != "ToggleCustomerAPI.ListRoutingControls" {
		t.Errorf("signed request answered %d %v, want 200 with the key, the body and the target", status, out)
	}
	status, out, h := signedPost(t, url, "route53-recovery-cluster", testKeyID, "not-the-secret-0123456789", []byte(`{}`))
	if status != http.StatusForbidden || out["__type"] != "InvalidSignatureException" || h.Get("X-Amzn-ErrorType") != "InvalidSignatureException" {
		t.Errorf("a wrong secret answered %d %v, want 403 InvalidSignatureException in JSON", status, out)
	}
	status, out, _ = signedPost(t, url, "route53-recovery-cluster", "AKIAUNKNOWN000000000", testSecret, []byte(`{}`))
	if status != http.StatusForbidden || out["__type"] != "UnrecognizedClientException" {
		t.Errorf("an unknown key answered %d %v, want 403 UnrecognizedClientException in JSON", status, out)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"controlpanels", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Amzn-ErrorType") != "MissingAuthenticationTokenException" {
		t.Errorf("an unsigned ListControlPanels answered %d %q, want 403 MissingAuthenticationTokenException", res.StatusCode, res.Header.Get("X-Amzn-ErrorType"))
	}
	status, out, _ = signedPost(t, url+"zonalshifts", "arc-zonal-shift", testKeyID, testSecret, []byte(`{}`))
	if status != http.StatusBadRequest || out["__type"] != "UnknownOperationException" {
		t.Errorf("a service without a handler answered %d %v, want 400 UnknownOperationException in JSON", status, out)
	}
	status, out, _ = signedPost(t, url, "ec2", testKeyID, testSecret, []byte(`{}`))
	if status != http.StatusForbidden || out["__type"] != "InvalidSignatureException" {
		t.Errorf("a request signed for ec2 answered %d %v, want 403 InvalidSignatureException", status, out)
	}
}
