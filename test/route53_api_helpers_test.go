package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// The access key of the Route 53 API tests' key file.
const (
	r53KeyID  = "AKIAHEALTHROUTETEST1"
	r53Secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYTESTSECRET"
)

// r53Server is a CoreDNS process serving example.org with route53_api: its DNS
// server, its API address and an SDK client signed with the test key.
type r53Server struct {
	srv     *coretest.Server
	api     string // the Route 53 API's address
	status  string // the operator API's base URL (status page, explain)
	client  *route53.Client
	zoneID  string
	dataDir string
}

// writeR53Keys writes the access key file into dir.
func writeR53Keys(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "route53.keys")
	if err := os.WriteFile(path, []byte("# test key\n"+r53KeyID+" "+r53Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// r53Client returns an SDK client for the API at addr, as Terraform's provider
// builds one with a custom endpoint.
func r53Client(addr, keyID, secret string) *route53.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(keyID, secret, ""),
		HTTPClient: &http.Client{Timeout: 30 * time.Second}}
	return route53.NewFromConfig(cfg, func(o *route53.Options) { o.BaseEndpoint = aws.String("http://" + addr) })
}

// startR53 starts CoreDNS with a healthroute block for example.org holding extra
// (Corefile lines) and route53_api on a free port.
func startR53(t *testing.T, extra string) *r53Server {
	t.Helper()
	return startR53API(t, "", extra)
}

// startR53API is startR53 with apiExtra (lines) in the route53_api block.
func startR53API(t *testing.T, apiExtra, extra string) *r53Server {
	t.Helper()
	dir := t.TempDir()
	keys := writeR53Keys(t, dir)
	port, apiPort, opPort := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	s := &r53Server{api: fmt.Sprintf("127.0.0.1:%d", apiPort), status: fmt.Sprintf("http://127.0.0.1:%d", opPort), dataDir: filepath.Join(dir, "state")}
	corefile := fmt.Sprintf(`example.org:%d {
    bind 127.0.0.1
    healthroute {
        api 127.0.0.1:%d
        route53_api %s {
            access_keys %s
%s
        }
        controls {
            data_dir %s
        }
%s
    }
}
`, port, opPort, s.api, keys, apiExtra, s.dataDir, extra)
	s.srv = coretest.Start(t, corefile, port, "example.org")
	s.client = r53Client(s.api, r53KeyID, r53Secret)
	s.zoneID = r53api.ZoneID("example.org.")
	return s
}

// change submits a change batch and returns its change ID.
func (s *r53Server) change(t *testing.T, changes ...types.Change) string {
	t.Helper()
	out, err := s.client.ChangeResourceRecordSets(context.Background(), &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(s.zoneID), ChangeBatch: &types.ChangeBatch{Changes: changes}})
	if err != nil {
		t.Fatalf("ChangeResourceRecordSets: %v", err)
	}
	return aws.ToString(out.ChangeInfo.Id)
}

// waitInSync polls GetChange until the change is INSYNC.
func waitInSync(t *testing.T, c *route53.Client, id string) {
	t.Helper()
	var last string
	waitUntil(t, 20*time.Second, "change "+id+" INSYNC", func() bool {
		out, err := c.GetChange(context.Background(), &route53.GetChangeInput{Id: aws.String(id)})
		if err != nil {
			last = err.Error()
			return false
		}
		last = string(out.ChangeInfo.Status)
		return out.ChangeInfo.Status == types.ChangeStatusInsync
	}, func() string { return "last status: " + last })
}

// createCheck creates an HTTP health check of url's host and port.
func createCheck(t *testing.T, c *route53.Client, ref, hostPort string) string {
	t.Helper()
	host, port, _ := strings.Cut(hostPort, ":")
	var p int64
	fmt.Sscan(port, &p)
	out, err := c.CreateHealthCheck(context.Background(), &route53.CreateHealthCheckInput{CallerReference: aws.String(ref),
		HealthCheckConfig: &types.HealthCheckConfig{Type: types.HealthCheckTypeHttp, IPAddress: aws.String(host), Port: aws.Int32(int32(p)),
			ResourcePath: aws.String("/health"), RequestInterval: aws.Int32(10), FailureThreshold: aws.Int32(1)}})
	if err != nil {
		t.Fatalf("CreateHealthCheck: %v", err)
	}
	return aws.ToString(out.HealthCheck.Id)
}

// aSet is an A record set with one value and the given routing fields.
func aSet(name, value, id string, mod func(*types.ResourceRecordSet)) *types.ResourceRecordSet {
	rs := &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA, TTL: aws.Int64(30),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String(value)}}}
	if id != "" {
		rs.SetIdentifier = aws.String(id)
	}
	if mod != nil {
		mod(rs)
	}
	return rs
}

func create(rs *types.ResourceRecordSet) types.Change {
	return types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: rs}
}

// healthyEndpoint is an HTTP server answering 200 on /health; downEndpoint an
// address where nothing listens.
func healthyEndpoint(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

func downEndpoint(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", coretest.FreePort(t))
}

// answersA returns the A addresses of a reply, sorted.
func answersA(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out
}

// apiCode returns the Route 53 error code of err ("" for none).
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// asInvalidChangeBatch reports whether err is the SDK's InvalidChangeBatch.
func asInvalidChangeBatch(err error, out **types.InvalidChangeBatch) bool {
	return errors.As(err, out)
}
