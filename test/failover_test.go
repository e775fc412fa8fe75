package test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// flipServer is a real HTTP endpoint whose health the test switches.
type flipServer struct {
	*httptest.Server
	ok atomic.Bool
}

func newFlipServer(t *testing.T, tlsOn bool) *flipServer {
	f := &flipServer{}
	f.ok.Store(true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.ok.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	})
	if tlsOn {
		f.Server = httptest.NewTLSServer(h)
	} else {
		f.Server = httptest.NewServer(h)
	}
	t.Cleanup(f.Close)
	return f
}

func firstA(m *dns.Msg) string {
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}

// TestEndToEnd runs the real CoreDNS binary with healthroute against real HTTP, HTTPS
// and TCP endpoints on loopback: answers fail over after failure_threshold probes and
// come back after recovery.
func TestEndToEnd(t *testing.T) {
	web := newFlipServer(t, false)
	secure := newFlipServer(t, true)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpAddr := tcp.Addr().String()
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { tcp.Close() })

	port := coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		ttl 5
		check web http %s/health {
			interval 200ms
			failure_threshold 2
			match OK
		}
		check secure https %s/ {
			interval 200ms
			failure_threshold 2
		}
		check db tcp %s {
			interval 200ms
			failure_threshold 1
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
		record tls.example.org. failover {
			primary   A 192.0.2.2 check secure
			secondary A 198.51.100.2
		}
		record db.example.org. failover {
			primary   A 192.0.2.3 check db
			secondary A 198.51.100.3
		}
	}
}`, port, web.URL, secure.URL, tcpAddr)
	srv := coretest.Start(t, corefile, port, "www.example.org")

	is := func(want string) func(*dns.Msg) bool {
		return func(m *dns.Msg) bool { return firstA(m) == want }
	}
	// All healthy: primaries, authoritative.
	m := srv.WaitFor(t, "www.example.org", dns.TypeA, 5*time.Second, "www primary", is("192.0.2.1"))
	if !m.Authoritative || m.Answer[0].Header().Ttl != 5 {
		t.Errorf("answer not authoritative or TTL %d != 5: %v", m.Answer[0].Header().Ttl, m)
	}
	srv.WaitFor(t, "tls.example.org", dns.TypeA, 5*time.Second, "tls primary (self-signed cert accepted)", is("192.0.2.2"))
	srv.WaitFor(t, "db.example.org", dns.TypeA, 5*time.Second, "db primary", is("192.0.2.3"))

	// Fail the endpoints: each name fails over.
	web.ok.Store(false)
	secure.ok.Store(false)
	tcp.Close()
	start := time.Now()
	srv.WaitFor(t, "www.example.org", dns.TypeA, 5*time.Second, "www fails over", is("198.51.100.1"))
	t.Logf("www failed over %v after the endpoint failed", time.Since(start))
	srv.WaitFor(t, "tls.example.org", dns.TypeA, 5*time.Second, "tls fails over", is("198.51.100.2"))
	srv.WaitFor(t, "db.example.org", dns.TypeA, 5*time.Second, "db fails over", is("198.51.100.3"))

	// Recover: back to the primary.
	web.ok.Store(true)
	secure.ok.Store(true)
	srv.WaitFor(t, "www.example.org", dns.TypeA, 5*time.Second, "www recovers", is("192.0.2.1"))
	srv.WaitFor(t, "tls.example.org", dns.TypeA, 5*time.Second, "tls recovers", is("192.0.2.2"))

	// Negative answers carry the synthesized SOA.
	nx := srv.Query(t, "nope.example.org", dns.TypeA)
	if nx.Rcode != dns.RcodeNameError || len(nx.Ns) != 1 || nx.Ns[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("nope.example.org: want NXDOMAIN with SOA, got %v", nx)
	}
}
