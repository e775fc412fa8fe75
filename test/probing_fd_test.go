//go:build linux

package test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// probingPrlimit sets the file descriptor limits of process pid to lim (nil: leave
// them) and returns the previous ones.
func probingPrlimit(pid int, lim *syscall.Rlimit) (syscall.Rlimit, error) {
	var old syscall.Rlimit
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE,
		uintptr(unsafe.Pointer(lim)), uintptr(unsafe.Pointer(&old)), 0, 0)
	if errno != 0 {
		return old, errno
	}
	return old, nil
}

// probingOpenFDs returns how many descriptors process pid has open. A limit of that
// many plus n leaves at least n free: new descriptors take the lowest free numbers.
func probingOpenFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("descriptors of the server not listed: %v", err)
	}
	return len(ents)
}

// probingAcceptor accepts connections on loopback and closes them: a healthy tcp
// target.
func probingAcceptor(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// A server out of file descriptors, its limit lowered and then filled by idle
// connections to its metrics listener, as a flood would: probes cannot open
// sockets, the check they would have failed stays healthy, DNS answers do not
// change, the skipped probes are counted and the log says so once.
//
// The interval is 200 ms so that the 2 s of exhaustion spans ten probes, more than
// the failure threshold; the health package's TestSchedulerLocalErrorKeepsState
// runs the defaults.
func TestProbingOutOfDescriptorsKeepsHealth(t *testing.T) {
	target := probingAcceptor(t)
	port, metrics := coretest.FreePort(t), fmt.Sprintf("127.0.0.1:%d", coretest.FreePort(t))
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
}`, port, metrics, target), port, "www.example.org")
	const pass = `coredns_healthroute_probes_total{check="ok",result="pass"}`
	probingWaitMetrics(t, metrics, 10*time.Second, "the check passes", func(m map[string]float64) bool { return m[pass] >= 1 })
	primary := func() bool {
		r := srv.Query(t, "www.example.org", dns.TypeA)
		return len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == "192.0.2.1"
	}
	if !primary() {
		t.Fatal("www does not answer the primary before the flood")
	}

	pid := srv.Cmd.Process.Pid
	room := 16
	lim := syscall.Rlimit{Cur: uint64(probingOpenFDs(t, pid) + room)}
	old, err := probingPrlimit(pid, nil)
	if err != nil {
		t.Skipf("prlimit: %v", err)
	}
	lim.Max = old.Max // only the soft limit: raised again below
	if _, err := probingPrlimit(pid, &lim); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if _, err := probingPrlimit(pid, &old); err != nil {
				t.Error(err)
			}
		}
	}
	defer restore()
	// Twice the room: the server accepts until it has no descriptor left, the rest
	// wait in its backlog to take any that a probe frees.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 2 * room {
		c, err := net.DialTimeout("tcp", metrics, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	const skippedLog = "for lack of local resources"
	probingWaitOutput(t, srv.Output, skippedLog, 10*time.Second)

	// Two seconds out of descriptors: ten probes at 200 ms, three fail a check.
	end := time.Now().Add(2 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	queries := 0
	for time.Now().Before(end) {
		queries++
		if !primary() {
			tick.Stop()
			t.Fatalf("query %d out of descriptors answered the secondary: the check went down\n%s", queries, srv.Output())
		}
		<-tick.C
	}
	tick.Stop()
	restore()
	for _, c := range held {
		c.Close()
	}
	held = nil

	m := probingWaitMetrics(t, metrics, 10*time.Second, "metrics served again", func(map[string]float64) bool { return true })
	local := m[`coredns_healthroute_probe_local_errors_total{check="ok"}`]
	down := m[`coredns_healthroute_check_transitions_total{check="ok",to="unhealthy"}`]
	t.Logf("out of descriptors for 2s: %d DNS answers unchanged, %v probes skipped, %v passed in all", queries, local, m[pass])
	if local < 4 {
		t.Errorf("%v probes counted as local errors; want more than the failure threshold (3) in 2s at 200ms", local)
	}
	if down != 0 {
		t.Errorf("the check went down %v times out of descriptors; want never", down)
	}
	if n := strings.Count(srv.Output(), skippedLog); n != 1 {
		t.Errorf("the log says %d times that probes could not run; want once (rate-limited):\n%s", n, srv.Output())
	}
}
