package health

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcServer starts a real gRPC server on loopback, with the standard health service
// unless bare, and returns its address and the health server to set states on.
func grpcServer(t *testing.T, secure, bare bool) (string, *health.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if secure {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{expiredCert(t)}})))
	}
	s := grpc.NewServer(opts...)
	hs := health.NewServer()
	if !bare {
		healthpb.RegisterHealthServer(s, hs)
	}
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return ln.Addr().String(), hs
}

func TestGRPC(t *testing.T) {
	tests := []struct {
		name    string
		secure  bool
		scheme  string
		tls     bool
		bare    bool
		service string
		status  healthpb.HealthCheckResponse_ServingStatus
		want    string
	}{
		{name: "server serving", scheme: "grpc", status: healthpb.HealthCheckResponse_SERVING},
		{name: "server not serving", scheme: "grpc", status: healthpb.HealthCheckResponse_NOT_SERVING, want: "NOT_SERVING"},
		{name: "service serving", scheme: "grpc", service: "app.v1.Api", status: healthpb.HealthCheckResponse_SERVING},
		{name: "service not serving", scheme: "grpc", service: "app.v1.Api", status: healthpb.HealthCheckResponse_NOT_SERVING, want: "NOT_SERVING"},
		{name: "service unknown status", scheme: "grpc", service: "app.v1.Api", status: healthpb.HealthCheckResponse_UNKNOWN, want: "UNKNOWN"},
		{name: "service not registered", scheme: "grpc", service: "other", status: healthpb.HealthCheckResponse_SERVING, want: "NotFound"},
		{name: "no health service", scheme: "grpc", bare: true, want: "Unimplemented"},
		{name: "grpcs, expired certificate", secure: true, scheme: "grpcs", status: healthpb.HealthCheckResponse_SERVING},
		{name: "tls option, expired certificate", secure: true, scheme: "grpc", tls: true, status: healthpb.HealthCheckResponse_SERVING},
		{name: "plaintext to a TLS server", secure: true, scheme: "grpc", status: healthpb.HealthCheckResponse_SERVING, want: "Unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, hs := grpcServer(t, tc.secure, tc.bare)
			svc := tc.service
			if svc == "other" {
				svc = "app.v1.Api"
			}
			hs.SetServingStatus(svc, tc.status)
			err, _ := probeOnce(t, &Spec{Name: "t", Type: GRPC, Target: tc.scheme + "://" + addr, Service: tc.service, TLS: tc.tls})
			wantResult(t, err, tc.want)
		})
	}
	t.Run("closed port", func(t *testing.T) {
		err, _ := probeOnce(t, &Spec{Name: "t", Type: GRPC, Target: "grpc://" + coretest.ClosedPort(t)})
		wantResult(t, err, "Unavailable")
	})
	t.Run("hangs", func(t *testing.T) {
		addr := rawServer(t, func(c net.Conn, done <-chan struct{}) { <-done })
		err, took := probeOnce(t, &Spec{Name: "t", Type: GRPC, Target: "grpc://" + addr, Interval: 300 * time.Millisecond})
		wantResult(t, err, "DeadlineExceeded")
		if took > 1300*time.Millisecond { // the budget, and a second for the client's teardown on a loaded machine
			t.Errorf("probe took %s; want its 300ms budget", took)
		}
	})
}
