package health

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// maxGRPCMessage bounds the health response a probe accepts.
const maxGRPCMessage = 16 << 10

// grpcChecker asks a server's standard health service (grpc.health.v1) whether
// Service ("" = the whole server) is SERVING, on a new connection per probe so that
// each probe measures the endpoint as it is now, not a connection kept from earlier.
type grpcChecker struct {
	target  string
	opts    []grpc.DialOption
	service string
	tls     credentials.TransportCredentials // nil: plaintext
}

func newGRPCChecker(spec *Spec, agent string) (Checker, error) {
	u, err := url.Parse(spec.Target)
	if err != nil {
		return nil, err
	}
	secure := spec.TLS
	switch u.Scheme {
	case "grpcs":
		secure = true
	case "grpc":
	default:
		return nil, fmt.Errorf("scheme %q, expected grpc or grpcs", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("target %q has no host", spec.Target)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if secure {
			port = "443"
		}
	}
	var tlsCreds credentials.TransportCredentials
	if secure {
		name := spec.Host
		if h, _, err := net.SplitHostPort(name); err == nil {
			name = h
		}
		if name == "" {
			name = u.Hostname()
		}
		tc := &tls.Config{InsecureSkipVerify: true} // certificates are not validated
		if net.ParseIP(name) == nil {
			tc.ServerName = name
		}
		tlsCreds = credentials.NewTLS(tc)
	}
	opts := []grpc.DialOption{
		grpc.WithUserAgent(agent),
		grpc.WithNoProxy(),
		grpc.WithDisableRetry(),
		grpc.WithDisableServiceConfig(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxGRPCMessage)),
	}
	if spec.Host != "" {
		opts = append(opts, grpc.WithAuthority(spec.Host))
	}
	// passthrough: the address is dialled as given, with no resolver goroutine.
	return &grpcChecker{target: "passthrough:///" + net.JoinHostPort(u.Hostname(), port), opts: opts, service: spec.Service, tls: tlsCreds}, nil
}

// Check passes when the health service answers SERVING before ctx ends.
func (g *grpcChecker) Check(ctx context.Context) error {
	// The client dials from its own goroutine, with its own context: the probe's
	// trace goes along in the dialer.
	tr := traceFrom(ctx)
	dial := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := tr.dial(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return newBudgetConn(c, maxGRPCBytes), nil
	})
	creds := insecure.NewCredentials()
	if g.tls != nil {
		creds = timedCreds{g.tls, tr}
	}
	cc, err := grpc.NewClient(g.target, append(g.opts[:len(g.opts):len(g.opts)], dial, grpc.WithTransportCredentials(creds))...)
	if err != nil {
		return err
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: g.service})
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	tr.noteFirstByte() // the response has arrived
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("service %q is %s", g.service, s)
	}
	return nil
}

// timedCreds records the TLS handshake of a probe's connection on its trace.
type timedCreds struct {
	credentials.TransportCredentials
	tr *trace
}

func (c timedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	start := time.Now()
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err == nil {
		c.tr.noteTLS(time.Since(start))
	}
	return conn, info, err
}

func (c timedCreds) Clone() credentials.TransportCredentials {
	return timedCreds{c.TransportCredentials.Clone(), c.tr}
}
