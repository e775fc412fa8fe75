package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestReadyWithinIntervalPlusTimeout: at start a check's first probe comes at a
// random point of its first interval, so the ready plugin reports ready up to one
// interval plus the probe's timeout after start, and no later: here a check every
// 2 s whose endpoint never answers (each probe takes its whole 1 s timeout) is
// ready within 3 s of the process answering DNS, plus 1 s of slack for a loaded
// machine.
func TestReadyWithinIntervalPlusTimeout(t *testing.T) {
	const interval, timeout = 2 * time.Second, time.Second
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	port, readyPort := coretest.FreePort(t), coretest.FreePort(t)
	coretest.Binary(t) // built before the clock starts
	srv := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	ready 127.0.0.1:%d
	healthroute {
		check hang http %s/ {
			interval %s
			timeout %s
		}
		record www.example.org. simple {
			A 192.0.2.1 check hang
		}
	}
}`, port, readyPort, hang.URL, interval, timeout), port, "www.example.org")
	started := time.Now() // the process answers DNS: its start-up (slower on a loaded machine) is behind it
	ready := func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	waitUntil(t, 10*time.Second, "ready", ready, srv.Output)
	took := time.Since(started)
	t.Logf("ready %v after start (interval %v, timeout %v)", took.Round(10*time.Millisecond), interval, timeout)
	if bound := interval + timeout + time.Second; took > bound {
		t.Errorf("ready %v after start, want within interval + timeout (+1 s slack), %v", took, bound)
	}
}
