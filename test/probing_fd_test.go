//go:build linux

package test

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
)

// probingOpenFDs returns how many descriptors process pid has open. A limit of that
// many plus n leaves at least n free: new descriptors take the lowest free numbers.
func probingOpenFDs(t *testing.T, pid int) int {
	t.Helper()
	n := coretest.OpenFiles(pid)
	if n < 0 {
		t.Skip("descriptors of the server not listed in /proc")
	}
	return n
}

// A server out of file descriptors keeps its check's health and its DNS answers.
// First its limit is lowered and the rest filled by idle connections to its
// metrics listener, as a flood would: probes run on the descriptors reserved for
// them and keep passing. Then its limit is lowered below every free descriptor
// number, where the reserve cannot help: probes cannot open sockets, the check
// they would have failed stays healthy, the skipped probes are counted and the
// log says so once.
//
// The interval is 200 ms so that 2 s of each spans ten probes, more than the
// failure threshold; the health package's TestSchedulerLocalErrorKeepsState runs
// the defaults.
func TestProbingOutOfDescriptorsKeepsHealth(t *testing.T) {
	target := coretest.Acceptor(t)
	port, metricsPort := coretest.FreePort(t), coretest.FreePort(t)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)
	metrics := "http://" + metricsAddr + "/metrics"
	srv := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus %s
	healthroute {
		check ok tcp %s {
			interval 200ms
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check ok
			secondary A 198.51.100.1
		}
	}
}`, port, metricsAddr, target), port, "www.example.org")
	const skipLog = "for lack of local resources"
	pass := func(m map[string]*dto.MetricFamily) float64 {
		return probingMetric(m, "probes_total", "check", "ok", "result", "pass")
	}
	local := func(m map[string]*dto.MetricFamily) float64 {
		return probingMetric(m, "probe_local_errors_total", "check", "ok")
	}
	m0 := probingWaitMetrics(t, metrics, 10*time.Second, "the check passes", func(m map[string]*dto.MetricFamily) bool { return pass(m) >= 1 })
	pid := srv.Cmd.Process.Pid
	old, err := coretest.Prlimit(pid, nil)
	if err != nil {
		t.Skipf("prlimit: %v", err)
	}
	restore := func() {
		if _, err := coretest.Prlimit(pid, &old); err != nil {
			t.Error(err)
		}
	}
	defer restore()
	// outOfDescriptors asks for www for 2 s, ten probes at 200 ms: three failures
	// would take the check down and answer the secondary.
	outOfDescriptors := func(what string) {
		t.Helper()
		end := time.Now().Add(2 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; time.Now().Before(end); i++ {
			r := srv.Query(t, "www.example.org", dns.TypeA)
			if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
				t.Fatalf("%s: query %d answered %v; want the primary: the check went down\n%s", what, i, r.Answer, srv.Output())
			}
			<-tick.C
		}
	}

	// 1. Filled by a flood of idle connections.
	const room = 16
	lim := syscall.Rlimit{Cur: uint64(probingOpenFDs(t, pid) + room), Max: old.Max} // the soft limit only
	if _, err := coretest.Prlimit(pid, &lim); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	// Twice the room: the server accepts until it has no descriptor left, the rest
	// wait in its backlog to take any that frees.
	var held []net.Conn
	closeHeld := func() {
		for _, c := range held {
			c.Close()
		}
		held = nil
	}
	defer closeHeld()
	for range 2 * room {
		c, err := net.DialTimeout("tcp", metricsAddr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	probingWaitOutput(t, srv.Output, "accept4: too many open files", 10*time.Second)
	outOfDescriptors("descriptors taken by a flood")
	restore()
	closeHeld()
	m1, _ := scrape(t, metrics)
	t.Logf("flood: %v probes passed, %v skipped (until the scrape after it)", pass(m1)-pass(m0), local(m1))
	if pass(m1)-pass(m0)+local(m1) < 4 {
		t.Errorf("%v probes passed, %v skipped in 2s at 200ms; want the check probed on", pass(m1)-pass(m0), local(m1))
	}

	// 2. No descriptor number left at all.
	lim.Cur = 3
	if _, err := coretest.Prlimit(pid, &lim); err != nil {
		t.Fatal(err)
	}
	probingWaitOutput(t, srv.Output, skipLog, 5*time.Second)
	outOfDescriptors("no descriptor left")
	restore()
	m2, _ := scrape(t, metrics)
	t.Logf("no descriptor: %v probes skipped, %v passed", local(m2)-local(m1), pass(m2)-pass(m1))
	if local(m2)-local(m1) < 4 {
		t.Errorf("%v probes counted as local errors in 2s at 200ms; want more than the failure threshold (3)", local(m2)-local(m1))
	}
	fail := probingMetric(m2, "probes_total", "check", "ok", "result", "fail")
	down := probingMetric(m2, "check_transitions_total", "check", "ok", "to", "unhealthy")
	if fail != 0 || down != 0 {
		t.Errorf("%v probes failed and the check went down %v times out of descriptors; want none", fail, down)
	}
	if n := strings.Count(srv.Output(), skipLog); n != 1 {
		t.Errorf("the log says %d times that probes could not run; want once (rate-limited):\n%s", n, srv.Output())
	}
}

// Started with a soft file descriptor limit under the hard one, as `ulimit -S -n`
// leaves it, the server raises the soft limit to the hard one (less one: the Go
// runtime's choice): probes and listeners get the descriptors the administrator
// allows.
func TestProbingRaisesSoftFDLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if old.Max < 1024 {
		t.Skipf("hard limit %d: too low to lower the soft one", old.Max)
	}
	coretest.Binary(t) // built before the limit is lowered
	low := old
	low.Cur = 512 // inherited by the server
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	port := coretest.FreePort(t)
	srv := func() *coretest.Server {
		defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) // the test's own, back once the server runs
		return coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		record www.example.org. simple {
			A 192.0.2.1
		}
	}
}`, port), port, "www.example.org")
	}()
	got, err := coretest.Prlimit(srv.Cmd.Process.Pid, nil)
	if err != nil {
		t.Skipf("prlimit: %v", err)
	}
	if got.Cur+1 < got.Max {
		t.Errorf("server's file descriptor limit: soft %d, hard %d; want the soft raised to the hard", got.Cur, got.Max)
	}
}
