package healthroute

import (
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/routing"
)

// TestServeWhilePublishing answers queries from many goroutines while health
// flips underneath; under -race this checks that the query path shares nothing
// mutable with publication, and every answer is one the rules allow.
func TestServeWhilePublishing(t *testing.T) {
	r, cfg := testResolver(t, treeBlock)
	r.Rand = nil // the production source: safe for concurrent use
	states := [][]string{nil, {"c1"}, {"c1", "c2"}, {"c1", "c2", "c3", "c4"}, {"c3"}}
	valid := map[string]bool{"192.0.2.1": true, "192.0.2.2": true, "198.51.100.1": true, "198.51.100.2": true}
	var wg sync.WaitGroup
	var served atomic.Int64
	stop := make(chan struct{})
	errs := make(chan string, 1)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := routing.Query{Name: "www.example.org.", Type: dns.TypeA, Client: testClient}
			for i := 0; i < 200_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ans := resolveAnswer(r, q)
				served.Add(1)
				if len(ans.RRs) != 1 || !valid[ans.RRs[0].(*dns.A).A.String()] {
					select {
					case errs <- fmt.Sprint(ans.RRs):
					default:
					}
					return
				}
			}
		}()
	}
	waitUntil(t, 5*time.Second, "readers running", func() bool { return served.Load() > 0 }, func() string { return "" })
	during := served.Load()
	// At least 500 publications, and on a loaded host more (for up to 5 s) until a
	// reader has been scheduled while they run.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 500 || served.Load() == during && time.Now().Before(deadline); i++ {
		r.Publish(snapshot(cfg, states[i%len(states)]...))
	}
	during = served.Load() - during
	close(stop)
	wg.Wait()
	select {
	case e := <-errs:
		t.Fatalf("an answer outside the rules while publishing: %s", e)
	default:
	}
	if during == 0 {
		t.Fatal("no query was answered while tables were being published: the test proved nothing")
	}
}

// TestShutdownLeavesNoGoroutine starts a block with probes, a latency_table watcher
// and the HTTP API, then shuts it down: every goroutine it started must end.
func TestShutdownLeavesNoGoroutine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	before := runtime.NumGoroutine()
	table := coretest.WriteFile(t, "lat.csv", "192.0.2.0/24,a,1\n")
	api := coretest.FreePort(t)
	h := testHandler(t, fmt.Sprintf(`healthroute {
		api 127.0.0.1:%d
		latency_table %s
		check up tcp %s {
			interval 100ms
		}
		check web http http://%s/ {
			interval 100ms
		}
		record l.example.org. latency {
			region a A 192.0.2.1 check up
			region b A 192.0.2.2 check web
		}
	}`, api, table, ln.Addr(), ln.Addr()))
	if err := h.OnStartup(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "ready", h.Ready, func() string { return "" })
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/checks", api)); err != nil {
		t.Fatalf("api: %v", err)
	} else {
		resp.Body.Close()
	}
	http.DefaultClient.CloseIdleConnections()
	if v := testutil.ToFloat64(checkHealthy.WithLabelValues("up")); v != 1 {
		t.Errorf("check_healthy{check=up} = %v while running, want 1", v)
	}
	if err := h.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	if checkHealthy.DeleteLabelValues("up") {
		t.Error("check_healthy{check=up} outlived the last block that defines the check")
	}
	if h.reg.scheduler() != nil {
		t.Error("the last release left the scheduler running")
	}
	ln.Close()
	waitUntil(t, 10*time.Second, "every goroutine ended after shutdown",
		func() bool { return runtime.NumGoroutine() <= before },
		func() string {
			buf := make([]byte, 1<<20)
			return fmt.Sprintf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		})
}

// TestAPIAddressInUse: an api address another socket holds fails startup with the
// Corefile line of the api property, and leaves nothing of the block running.
func TestAPIAddressInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	h := testHandler(t, fmt.Sprintf(`healthroute {
		api %s
		check up tcp %s {
			interval 100ms
		}
		record www.example.org. failover {
			primary A 192.0.2.1 check up
			secondary A 192.0.2.2
		}
	}`, held.Addr(), held.Addr()))
	err = h.OnStartup()
	if err == nil {
		h.OnShutdown()
		t.Fatal("OnStartup succeeded on an address in use")
	}
	if want := "Testfile:2 - api " + held.Addr().String(); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
	if h.reg.scheduler() != nil {
		t.Error("a failed startup left the scheduler running")
	}
	if got := h.reg.op.Blocks(); len(got) != 0 {
		t.Errorf("a failed startup left %d blocks registered with the operator", len(got))
	}
}
