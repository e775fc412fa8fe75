//go:build linux

package test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/healthroute/healthroute/internal/coretest"
)

// BenchmarkDNSUnderGossipFlood measures what a flood of garbage at a fleet member's
// gossip port (no key is needed to send it) costs its DNS: dnsperf drives the member,
// each pinned to a core of its own, for 10 s without a flood, then while this process
// sends 20,000 and 50,000 datagrams of random bytes a second at the gossip port from
// dnsperf's core, then without a flood again. It reports each run's queries a second,
// the ratio of the flooded runs to the mean of the quiet ones, and whether the member
// still counted both members' reports at the end of each run. Run it on a quiet
// machine with at least 2 cores:
//
//	go test -run '^$' -bench DNSUnderGossipFlood -benchtime 1x ./test/
func BenchmarkDNSUnderGossipFlood(b *testing.B) {
	for _, tool := range []string{"dnsperf", "taskset"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s is needed (apt-get install dnsperf util-linux): %v", tool, err)
		}
	}
	if runtime.NumCPU() < 2 {
		b.Fatal("needs 2 cores: the member on one, dnsperf and the flood on the other")
	}
	ep := newFleetEndpoint(b, "")
	ms := fleetMembers(b, 2, ep.URL)
	for _, m := range ms {
		m.start(b)
	}
	a := ms[0]
	fleetWaitTB(b, 20*time.Second, "dns-a counts both members", func() bool { n, _ := a.counted(); return n == 2 })
	if out, err := exec.Command("taskset", "-a", "-p", "-c", "0", strconv.Itoa(a.srv.Cmd.Process.Pid)).CombinedOutput(); err != nil {
		b.Fatalf("taskset: %v: %s", err, out)
	}
	queries := filepath.Join(b.TempDir(), "queries")
	if err := os.WriteFile(queries, []byte("www.example.org A\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		// Quiet runs between the flooded ones: each flooded run is compared with the
		// mean of the quiet runs on either side of it, so that a machine whose speed
		// drifts does not pass for a cost of the flood.
		// The run at an unused port costs the sender (on dnsperf's core) what the
		// 50k run does and the member nothing: what it loses is the sender's share.
		rates := []int{0, 20000, 0, 50000, 0, -50000, 0}
		unused := coretest.FreePort(b)
		qps := make([]float64, len(rates))
		for i, rate := range rates {
			stop := make(chan struct{})
			done := make(chan int)
			if rate > 0 {
				go floodUDP(b, fmt.Sprintf("127.0.0.1:%d", a.gossip), rate, 1, stop, done)
			} else if rate < 0 {
				go floodUDP(b, fmt.Sprintf("127.0.0.1:%d", unused), -rate, 1, stop, done)
			}
			qps[i] = dnsperfQPS(b, a.srv.Addr, queries, 10*time.Second)
			sent := 0
			if rate != 0 {
				close(stop)
				sent = <-done
			}
			n, names := a.counted()
			b.Logf("flood %d/s (%d sent): %.0f qps; dns-a counts %d members (%s)", rate, sent, qps[i], n, names)
			if n != 2 {
				b.Errorf("flood %d/s: dns-a counts %d members' reports (%s), want 2", rate, n, names)
			}
		}
		for i, rate := range rates {
			if rate == 0 {
				b.ReportMetric(qps[i], fmt.Sprintf("qps-quiet%d", i/2+1))
				continue
			}
			name := fmt.Sprintf("flood%dk", rate/1000)
			if rate < 0 {
				name = fmt.Sprintf("unused%dk", -rate/1000)
			}
			b.ReportMetric(qps[i], "qps-"+name)
			b.ReportMetric(qps[i]/((qps[i-1]+qps[i+1])/2), "ratio-"+name)
		}
		// The member's own share of the 50k flood's cost: the flooded run against the
		// run whose sender cost the same but whose datagrams went nowhere.
		b.ReportMetric(qps[3]/qps[5], "flood50k/unused50k")
	}
}

// floodUDP sends rate datagrams of 512 random bytes a second to addr, from CPU cpu
// (-1: wherever the scheduler runs it), until stop closes; it sends how many it
// sent on done.
func floodUDP(b testing.TB, addr string, rate, cpu int, stop <-chan struct{}, done chan<- int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			b.Errorf("pinning the flood to CPU %d: %v", cpu, err)
		}
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		b.Error(err)
		done <- 0
		return
	}
	defer c.Close()
	junk := make([]byte, 512)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start, n := time.Now(), 0
	for range 10 * 60 * 1000 { // at most 10 minutes of ticks
		select {
		case <-stop:
			done <- n
			return
		case <-tick.C:
		}
		// Send what is owed since the start: ticks that came late are made up.
		for owed := int(time.Since(start).Seconds()*float64(rate)) - n; owed > 0; owed-- {
			for i := range junk {
				junk[i] = byte(rand.Uint32())
			}
			c.Write(junk)
			n++
		}
	}
	done <- n
}

var dnsperfRate = regexp.MustCompile(`Queries per second:\s+([0-9.]+)`)

// dnsperfQPS runs dnsperf on CPU 1 against addr for d and returns its queries a second.
func dnsperfQPS(b *testing.B, addr, queries string, d time.Duration) float64 {
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("taskset", "-c", "1", "dnsperf", "-s", host, "-p", port, "-d", queries,
		"-l", strconv.Itoa(int(d.Seconds())), "-c", "4", "-q", "200")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("dnsperf: %v\n%s", err, out)
	}
	m := dnsperfRate.FindSubmatch(out)
	if m == nil {
		b.Fatalf("dnsperf printed no rate:\n%s", out)
	}
	qps, _ := strconv.ParseFloat(string(m[1]), 64)
	if !strings.Contains(string(out), "NOERROR") {
		b.Errorf("dnsperf's answers were not NOERROR:\n%s", out)
	}
	return qps
}

// fleetWaitTB waits (up to within) until cond holds.
func fleetWaitTB(b testing.TB, within time.Duration, what string, cond func() bool) {
	coretest.WaitUntil(b, within, what, cond, func() string { return "" })
}
