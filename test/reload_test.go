package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestEndToEndReloadKeepsState: a reload that keeps a check's definition keeps its
// state, so a failed-over name stays failed over through the reload instead of
// resetting to "new, healthy".
func TestEndToEndReloadKeepsState(t *testing.T) {
	down := newFlipServer(t, false)
	down.ok.Store(false)
	port := coretest.FreePort(t)
	corefile := func(extra string) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		check web http %s/ {
			interval 300ms
			failure_threshold 2
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
		%s
	}
}`, port, down.URL, extra)
	}
	srv := coretest.Start(t, corefile(""), port, "www.example.org")
	is := func(want string) func(*dns.Msg) bool { return func(m *dns.Msg) bool { return firstA(m) == want } }
	srv.WaitFor(t, "www.example.org", dns.TypeA, 10*time.Second, "failed over before the reload", is("198.51.100.1"))

	srv.Reload(t, corefile(`record new.example.org. simple {
			A 192.0.2.77
		}`))
	srv.WaitFor(t, "new.example.org", dns.TypeA, 15*time.Second, "the reloaded Corefile serves", is("192.0.2.77"))
	// Right after the reload: a reset check would read healthy (new) for two probes.
	for i := range 5 {
		if got := firstA(srv.Query(t, "www.example.org", dns.TypeA)); got != "198.51.100.1" {
			t.Fatalf("query %d after reload: %s, want the secondary: the check's state was not carried over\n%s", i, got, srv.Output())
		}
	}
}

// TestEndToEndReady: the ready plugin reports ready only once every check has a
// first result.
func TestEndToEndReady(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "OK")
	}))
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		slow.Close()
	})
	port, readyPort := coretest.FreePort(t), coretest.FreePort(t)
	srv := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	ready 127.0.0.1:%d
	healthroute {
		check slow http %s/ {
			interval 100ms
			timeout 20s
		}
		check off tcp 127.0.0.1:9 {
			disabled
		}
		record www.example.org. simple {
			A 192.0.2.1 check slow
		}
	}
}`, port, readyPort, slow.URL), port, "www.example.org")
	readyURL := fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)
	status := func() int {
		resp, err := http.Get(readyURL)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The probe hangs until released: not ready, however often we ask.
	for range 5 {
		if s := status(); s != http.StatusServiceUnavailable {
			t.Fatalf("ready endpoint answered %d before the first probe finished, want 503\n%s", s, srv.Output())
		}
	}
	close(release)
	waitUntil(t, 10*time.Second, "ready once the first probe could finish",
		func() bool { return status() == http.StatusOK }, srv.Output)
}
