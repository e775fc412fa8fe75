package websocketdr_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthroute/healthroute/examples/websocket-dr"
	"github.com/healthroute/healthroute/examples/websocket-dr/client"
	"github.com/healthroute/healthroute/examples/websocket-dr/internal/lab"
	"github.com/healthroute/healthroute/examples/websocket-dr/wire"
	"github.com/healthroute/healthroute/internal/coretest"
)

// Test-sized settings. The Corefile's own (interval 1s, failure_threshold 2, ttl 1)
// are used unchanged.
const (
	clients    = 50
	checkEvery = time.Second
	threshold  = 2
	heartbeat  = 500 * time.Millisecond
	replicate  = 500 * time.Millisecond
	writeEvery = 100 * time.Millisecond
	// A lost write was acknowledged at most one flush interval plus one flush's
	// round trip before the crash; the slack covers the round trip and scheduling
	// under the race detector on two shared cores.
	lossWindow = replicate + 500*time.Millisecond
)

// safeBuffer collects a process's output.
type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func region(t *testing.T, bin, name string, port int, out *safeBuffer) *lab.Proc {
	t.Helper()
	ip := lab.PrimaryIP
	if name == "standby" {
		ip = lab.StandbyIP
	}
	p, err := lab.StartRegion(bin, name, ip, port, replicate, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestFailover is the end-to-end check: CoreDNS with healthroute, both
// regions and 50 clients on loopback; the primary is killed, DNS fails over, every
// client resumes its session in the standby, losing only writes acknowledged within
// the replication lag; then the primary returns and DNS fails back.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: builds and runs CoreDNS and two regions")
	}
	bin := filepath.Join(t.TempDir(), "region")
	if err := lab.Build("./examples/websocket-dr/cmd/region", bin); err != nil {
		t.Fatal(err)
	}
	dnsPort := coretest.FreePort(t)
	port, err := lab.FreeServicePort()
	if err != nil {
		t.Fatal(err)
	}
	var out safeBuffer
	primary := region(t, bin, "primary", port, &out)
	region(t, bin, "standby", port, &out)
	dns := coretest.Start(t, websocketdr.WithPorts(websocketdr.Corefile, dnsPort, port), dnsPort, websocketdr.Name)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("regions:\n%s\ncoredns:\n%s", out.String(), dns.Output())
		}
	})
	ctx := t.Context()
	if _, err := lab.WaitDNS(ctx, dns.Addr, websocketdr.Name, lab.PrimaryIP, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	fleet := lab.StartFleet(ctx, clients, client.Options{
		Name: websocketdr.Name, DNS: dns.Addr, Port: port,
		Heartbeat: heartbeat, Handshake: time.Second,
		Backoff: client.Backoff{Base: 250 * time.Millisecond, Cap: 2 * time.Second, Attempts: 30},
	}, writeEvery)
	t.Cleanup(fleet.Stop)
	if err := fleet.Wait(20*time.Second, "all clients connected to the primary", lab.AllIn("primary", clients, time.Time{})); err != nil {
		t.Fatal(err)
	}
	// Let every session build up state that has been replicated.
	if err := fleet.WaitWrites(20, 20*time.Second); err != nil {
		t.Fatal(err)
	}

	fault := time.Now()
	primary.Kill()
	switched, err := lab.WaitDNS(ctx, dns.Addr, websocketdr.Name, lab.StandbyIP, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Wait(15*time.Second, "all clients resumed in the standby", lab.AllIn("standby", clients, fault)); err != nil {
		t.Fatal(err)
	}
	tl := lab.Measure(fleet, fault, switched, "standby")
	t.Logf("failover timeline (%d clients, check interval %s x failure_threshold %d, ttl 1, heartbeat %s, backoff 250ms..2s full jitter, replication every %s, a write every %s per client):\n%s",
		clients, checkEvery, threshold, heartbeat, replicate, writeEvery, tl)

	if limit := checkEvery*threshold + time.Second; tl.DNSSwitch > limit {
		t.Errorf("DNS switched %s after the fault, want within interval x threshold + 1s = %s", tl.DNSSwitch, limit)
	}
	if tl.AllBack > 10*time.Second {
		t.Errorf("all clients back %s after the fault, want within 10s", tl.AllBack)
	}
	if spread := tl.LastFirstAttempt - tl.FirstAttempt; spread < 100*time.Millisecond || tl.Busiest100ms == clients {
		t.Errorf("first reconnect attempts spread over %s (%d of %d in one 100 ms), want jitter to spread them", spread, tl.Busiest100ms, clients)
	}
	// Data loss: bounded by the replication lag, and every session survived.
	if len(tl.Missing) > 0 {
		t.Errorf("lost writes of %v do not match any acknowledgement", tl.Missing)
	}
	if tl.OldestLost > lossWindow {
		t.Errorf("a write acknowledged %s before the crash was lost, want only writes within %s", tl.OldestLost, lossWindow)
	}
	inWindow := 0
	for _, m := range fleet.Members {
		for _, a := range m.Acks() {
			if a.Time.Before(fault) && fault.Sub(a.Time) <= lossWindow {
				inWindow++
			}
		}
	}
	if tl.Lost > inWindow {
		t.Errorf("%d writes lost, more than the %d acknowledged within %s before the crash", tl.Lost, inWindow, lossWindow)
	}
	for _, e := range fleet.Events() {
		if e.State == client.Connected && e.Region == "standby" && e.Version == 0 {
			t.Errorf("%s resumed in the standby with an empty session", e.User)
		}
	}
	t.Logf("loss bound: %d writes lost of %d acknowledged within %s before the crash", tl.Lost, inWindow, lossWindow)

	// Failback: the primary returns, takes the sessions over from the standby, passes
	// two checks in a row, and DNS answers it again.
	region(t, bin, "primary", port, &out)
	back := time.Now() // the region is up: its start-up (slower on a loaded machine) is behind it
	failback, err := lab.WaitDNS(ctx, dns.Addr, websocketdr.Name, lab.PrimaryIP, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failback: healthroute answers the primary %d ms after it was restarted", failback.Sub(back).Milliseconds())
	if limit := checkEvery*threshold + 2*time.Second; failback.Sub(back) > limit {
		t.Errorf("DNS failed back %s after the primary returned, want within %s", failback.Sub(back), limit)
	}
	if n := sessions(t, fmt.Sprintf("http://%s:%d", lab.PrimaryIP, port)); n != clients {
		t.Errorf("the returning primary holds %d sessions, want all %d from the standby", n, clients)
	}
}

func sessions(t *testing.T, base string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/snapshot", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all []wire.Session
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	return len(all)
}

// TestCorefilePrometheus checks that the alarm-style variant is accepted by the
// plugin and answers the service name.
func TestCorefilePrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: builds and runs CoreDNS")
	}
	port := coretest.FreePort(t)
	dns := coretest.Start(t, websocketdr.WithPorts(websocketdr.CorefilePrometheus, port, websocketdr.ServicePort), port, websocketdr.Name)
	ips, err := lab.Lookup(dns.Addr, websocketdr.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(ips) != 1 || (ips[0] != lab.PrimaryIP && ips[0] != lab.StandbyIP) {
		t.Fatalf("%s answered %v, want one of the regions\n%s", websocketdr.Name, ips, dns.Output())
	}
}
