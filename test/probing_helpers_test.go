// Package test holds end-to-end tests that run the real CoreDNS binary of this
// repository (internal/coretest) against real endpoints on loopback.
package test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// probingScrape returns every sample the metrics endpoint at addr exports, keyed
// by the series as printed (name{label="value",...}).
func probingScrape(addr string) (map[string]float64, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: status %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// probingWaitMetrics scrapes addr until cond holds, failing the test after within;
// it returns the samples that satisfied cond.
func probingWaitMetrics(t *testing.T, addr string, within time.Duration, what string, cond func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond) // paces scrapes of a busy process
	defer tick.Stop()
	var lastErr error
	for time.Now().Before(deadline) {
		m, err := probingScrape(addr)
		if err == nil && cond(m) {
			return m
		}
		lastErr = err
		<-tick.C
	}
	t.Fatalf("%s: not within %s (last scrape error: %v)", what, within, lastErr)
	return nil
}

// probingWaitOutput waits until the server's output contains s, failing the test
// after within.
func probingWaitOutput(t *testing.T, output func() string, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the server's output within %s:\n%s", s, within, output())
		}
		<-tick.C
	}
}

// probingHungListener listens on loopback and never accepts: connections complete
// into its backlog and then hear nothing, so every probe of it hangs until its
// budget ends; once the backlog is full, connecting hangs too.
func probingHungListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// probingClosedPort returns a loopback address nothing listens on: connections
// are refused at once.
func probingClosedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
