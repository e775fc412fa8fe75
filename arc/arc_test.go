package arc

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
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

const (
	testKeyID  = "AKIATESTKEY000000001"
	testSecret = "test-secret-0123456789abcdefghij"
)

// testEndpoint is the API listener over a real single-voter node.
type testEndpoint struct {
	t    *testing.T
	url  string
	node *control.Node
	seq  atomic.Uint64
}

// start starts a single-voter node in a temporary directory with policy p and
// the Route 53 API's listener serving ARC's APIs over it.
func start(t *testing.T, p control.Policy) *testEndpoint {
	t.Helper()
	return startWith(t, p, Backend{})
}

// startWith is start with be's Resources and Now (its Node is the test's).
func startWith(t *testing.T, p control.Policy, be Backend) *testEndpoint {
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
	n.SetPolicy(p)
	coretest.WaitUntil(t, 10*time.Second, "the node leads", func() bool { return n.Status().CanChange }, func() string { return n.Status().State })
	node := func() *control.Node { return n }
	s, err := r53api.Start("127.0.0.1:0", keys, r53api.DefaultLimits, r53api.Backend{Node: node, Services: Services(Backend{Node: node, Resources: be.Resources, Now: be.Now})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &testEndpoint{t: t, url: "http://" + s.Addr(), node: n}
}

// call sends a signed request for service and decodes the answer into out
// (when non-nil); it returns the status and, for an error, its __type.
func (e *testEndpoint) call(service, method, path, target string, in, out any) (int, map[string]any) {
	e.t.Helper()
	var body []byte
	if in != nil {
		body, _ = json.Marshal(in)
	}
	req, _ := http.NewRequest(method, e.url+path, bytes.NewReader(body))
	if target != "" {
		req.Header.Set("X-Amz-Target", targetPrefix+target)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	}
	// Two identical requests signed in one second would be one signature, refused
	// as a replay: a signed counter tells them apart.
	req.Header.Set("X-Test-Seq", strconv.FormatUint(e.seq.Add(1), 10))
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret},
		req, hex.EncodeToString(sum[:]), service, "us-east-1", time.Now()); err != nil {
		e.t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			e.t.Fatalf("%s %s answered %d with %q, not JSON", method, path, res.StatusCode, b)
		}
		return res.StatusCode, doc
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %q", method, path, err, b)
		}
	}
	return res.StatusCode, nil
}

// cluster calls an operation of the cluster API.
func (e *testEndpoint) cluster(op string, in, out any) (int, map[string]any) {
	e.t.Helper()
	return e.call("route53-recovery-cluster", http.MethodPost, "/", op, in, out)
}
