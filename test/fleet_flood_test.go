//go:build linux

package test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/internal/coretest"
)

// TestFleetIdleConnectionFlood opens 3,000 idle TCP connections to a member's gossip
// port from 30 loopback addresses (no key is needed to connect) while the member
// runs with `ulimit -n 1024`. Its health check, its DNS answers over UDP and TCP
// and its count of the other member must not change, its open files must stay far
// from the limit, and every idle connection must be closed within seconds.
func TestFleetIdleConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("two CoreDNS processes and 3,000 connections")
	}
	coretest.Binary(t)
	ep := newFleetEndpoint(t, "") // healthy for every checker
	ms := fleetMembers(t, 2, ep.URL)
	a, b := ms[0], ms[1]
	for _, m := range ms {
		m.start(t)
	}
	diag := func() string { return a.srv.Output() }
	fleetWait(t, 10*time.Second, "dns-a counts both members", func() bool { n, _ := a.counted(); return n == 2 }, diag)
	pid := a.srv.Cmd.Process.Pid
	if _, err := coretest.Prlimit(pid, &syscall.Rlimit{Cur: 1024, Max: 1024}); err != nil {
		t.Fatalf("prlimit %d: %v", pid, err)
	}
	base := coretest.OpenFiles(pid)

	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	var wg, ended sync.WaitGroup
	dialErrs, stillOpen := 0, 0
	var longest time.Duration
	// watch reads c until the member closes it and notes how long it stayed open.
	watch := func(c net.Conn) {
		defer ended.Done()
		opened := time.Now()
		c.SetReadDeadline(opened.Add(15 * time.Second))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		mu.Lock()
		defer mu.Unlock()
		if errors.As(err, &ne) && ne.Timeout() {
			stillOpen++
			return
		}
		longest = max(longest, time.Since(opened))
	}
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(i+1))}, Timeout: 2 * time.Second}
			for range 100 {
				c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", a.gossip))
				mu.Lock()
				if err != nil {
					dialErrs++
				} else {
					conns = append(conns, c)
					ended.Add(1)
					go watch(c)
				}
				mu.Unlock()
			}
		}()
	}
	// While the flood is on, sample the member every 100 ms for 4 s.
	peak := base
	window := time.Now().Add(4 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	udp, tcp := &dns.Client{Timeout: 2 * time.Second}, &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	for time.Now().Before(window) { // a measuring window, not a wait for an event
		peak = max(peak, coretest.OpenFiles(pid))
		for _, c := range []*dns.Client{udp, tcp} {
			r, _, err := c.Exchange(q, a.srv.Addr)
			if err != nil || len(r.Answer) == 0 || !strings.Contains(r.Answer[0].String(), fleetPrimary) {
				t.Fatalf("during the flood, %s query: %v %v\n%s", c.Net, err, r, diag())
			}
		}
		if n, names := a.counted(); n != 2 {
			t.Fatalf("during the flood dns-a counts %d (%s), want both members\n%s", n, names, diag())
		}
		<-tick.C
	}
	tick.Stop()
	wg.Wait()
	t.Logf("%d connections open from the test, %d refused at dial; dns-a's open files: %d before, at most %d during", len(conns), dialErrs, base, peak)
	if peak > base+fleet.DefaultStreams+20 {
		t.Errorf("dns-a's open files peaked at %d (from %d), want at most the gossip port's %d connections more", peak, base, fleet.DefaultStreams)
	}

	// Every idle connection is closed by the member: refused ones at once, admitted
	// ones 2 s after they opened.
	ended.Wait()
	t.Logf("the longest-lived idle connection was closed by dns-a after %s", longest.Round(time.Millisecond))
	if stillOpen > 0 {
		t.Errorf("%d idle connections still open after 15 s", stillOpen)
	}
	if longest > 5*time.Second {
		t.Errorf("an idle connection stayed open %s, want about 2s", longest)
	}
	if n, _ := b.counted(); n != 2 {
		t.Errorf("dns-b counts %d members after the flood, want 2", n)
	}
}

// TestFleetGarbageFloodKeepsHeartbeats sends 20,000 datagrams of random bytes a
// second (no key is needed to send them) at a member's gossip port for 5 s: the
// member goes on answering DNS, counts the other member throughout, and misses
// at most one of the other member's heartbeats in that time, as its
// fleet_heartbeats_missed_total counts them.
func TestFleetGarbageFloodKeepsHeartbeats(t *testing.T) {
	if testing.Short() {
		t.Skip("two CoreDNS processes and a flood")
	}
	coretest.Binary(t)
	ep := newFleetEndpoint(t, "")
	ms := fleetMembers(t, 2, ep.URL)
	a := ms[0]
	for _, m := range ms {
		m.start(t)
	}
	diag := func() string { return a.srv.Output() }
	fleetWait(t, 10*time.Second, "dns-a counts both members", func() bool { n, _ := a.counted(); return n == 2 }, diag)
	const name = "coredns_healthroute_fleet_heartbeats_missed_total"
	missed := func() float64 { return metricValue(a.scrapeMetrics(t), name, map[string]string{"member": "dns-b"}) }
	// The series exists from dns-b's first heartbeat on.
	fleetWait(t, 10*time.Second, "dns-a exports "+name+"{member=\"dns-b\"}", func() bool {
		return slices.ContainsFunc(a.scrapeMetrics(t)[name].GetMetric(), func(m *dto.Metric) bool { return hasLabels(m, map[string]string{"member": "dns-b"}) })
	}, diag)
	before := missed()

	stop, done := make(chan struct{}), make(chan int)
	go floodUDP(t, fmt.Sprintf("127.0.0.1:%d", a.gossip), 20000, -1, stop, done)
	window := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(250 * time.Millisecond)
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	c := &dns.Client{Timeout: 2 * time.Second}
	for time.Now().Before(window) { // a measuring window, not a wait for an event
		r, _, err := c.Exchange(q, a.srv.Addr)
		if err != nil || len(r.Answer) == 0 || !strings.Contains(r.Answer[0].String(), fleetPrimary) {
			close(stop)
			<-done
			t.Fatalf("during the flood: %v %v\n%s", err, r, diag())
		}
		if n, names := a.counted(); n != 2 {
			close(stop)
			<-done
			t.Fatalf("during the flood dns-a counts %d (%s), want both members\n%s", n, names, diag())
		}
		<-tick.C
	}
	tick.Stop()
	close(stop)
	sent := <-done
	lost := missed() - before // a beat lost in the last second counts only with the next: not here
	t.Logf("%d datagrams sent in 5 s; dns-a missed %v of dns-b's heartbeats", sent, lost)
	if sent < 50000 {
		t.Errorf("the flood sent %d datagrams in 5 s, want about 100,000", sent)
	}
	if lost > 1 {
		t.Errorf("dns-a missed %v of dns-b's heartbeats during the flood, want at most 1 of about 5", lost)
	}
}
