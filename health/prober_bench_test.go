package health

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// responderEnv, set in the environment of this package's test binary, makes it a
// responder process instead of running tests: it listens on that many loopback ports
// with the minimal HTTP endpoint of httpResponders, prints their addresses one a line
// and serves until its standard input closes. BenchmarkProber runs its endpoints so,
// in a process of their own, so that the CPU it measures is the prober's alone.
// With responderTLSEnv=1 as well, the endpoints speak HTTPS (a self-signed ECDSA
// P-256 certificate).
const (
	responderEnv    = "HEALTHROUTE_BENCH_RESPONDERS"
	responderTLSEnv = "HEALTHROUTE_BENCH_RESPONDERS_TLS"
)

func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv(responderEnv)); err == nil && n > 0 {
		os.Exit(serveResponders(n, os.Getenv(responderTLSEnv) == "1"))
	}
	os.Exit(m.Run())
}

// serveResponders is the responder process: n listeners answering 200 to each request
// and closing, until standard input closes.
func serveResponders(n int, useTLS bool) int {
	var conf *tls.Config
	if useTLS {
		cert, err := selfSignedCert(time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		conf = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if conf != nil {
			ln = tls.NewListener(ln, conf)
		}
		fmt.Println(ln.Addr())
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go respond(c)
			}
		}()
	}
	io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
	return 0
}

// respond reads a request head (bounded) and answers 200 with a two-byte body.
func respond(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReaderSize(c, 1024)
	for range 32 {
		line, err := br.ReadSlice('\n')
		if err != nil || len(line) <= 2 {
			break
		}
	}
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK")
}

// responderProcess starts this test binary as a responder process with n endpoints,
// on CPU cpu through taskset when there is one, and returns their addresses; the
// process ends with the benchmark.
func responderProcess(b *testing.B, n int, cpu string, useTLS bool) []string {
	addrs, _ := responderProcessPID(b, n, cpu, useTLS)
	return addrs
}

// responderProcessPID is responderProcess, also returning the process's id.
func responderProcessPID(b *testing.B, n int, cpu string, useTLS bool) ([]string, int) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{self, "-test.run=^$"}
	if ts, err := exec.LookPath("taskset"); err == nil && cpu != "" {
		args = append([]string{ts, "-c", cpu}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), responderEnv+"="+strconv.Itoa(n))
	if useTLS {
		cmd.Env = append(cmd.Env, responderTLSEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(stdout)
	addrs := make([]string, 0, n)
	for len(addrs) < n && sc.Scan() {
		addrs = append(addrs, strings.TrimSpace(sc.Text()))
	}
	if len(addrs) < n {
		b.Fatalf("responder process gave %d of %d addresses: %v", len(addrs), n, sc.Err())
	}
	return addrs, cmd.Process.Pid
}

// processCPU returns the CPU time (user and kernel) process pid has used so far,
// from /proc (Linux; 0 elsewhere), to the kernel's clock tick (10 ms).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: utime and stime are the
	// 12th and 13th of them, in ticks of 1/100 s.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// phaseObserver counts probes: warm closes when warmAt have completed (benchProber:
// two a check; first results publish a snapshot each, which steady probing does
// not), done when measured more have completed after it; it keeps the lags of those.
type phaseObserver struct {
	n                  atomic.Int64
	failed             atomic.Int64 // failed probes after warm
	took               atomic.Int64 // summed duration of the probes after warm, ns
	warmAt, doneAt     int64
	warm, done         chan struct{}
	warmOnce, doneOnce sync.Once
	mu                 sync.Mutex
	lags               []time.Duration
}

func newPhaseObserver(warmAt, measured int) *phaseObserver {
	return &phaseObserver{warmAt: int64(warmAt), doneAt: int64(warmAt + measured),
		warm: make(chan struct{}), done: make(chan struct{})}
}

func (o *phaseObserver) Probed(_ *Spec, err error, took time.Duration) {
	n := o.n.Add(1)
	if n > o.warmAt {
		o.took.Add(int64(took))
		if err != nil {
			o.failed.Add(1)
		}
	}
	switch {
	case n == o.warmAt:
		o.warmOnce.Do(func() { close(o.warm) })
	case n == o.doneAt:
		o.doneOnce.Do(func() { close(o.done) })
	}
}

func (o *phaseObserver) Started(_ *Spec, lag time.Duration) {
	if o.n.Load() < o.warmAt {
		return
	}
	o.mu.Lock()
	o.lags = append(o.lags, lag)
	o.mu.Unlock()
}

func (o *phaseObserver) Changed(*Spec, bool)  {}
func (o *phaseObserver) Skipped(*Spec, error) {}

// wait waits for ch, at most d, failing b after it.
func wait(b *testing.B, ch <-chan struct{}, d time.Duration, what string, o *phaseObserver) {
	select {
	case <-ch:
	case <-time.After(d):
		b.Fatalf("%s: only %d probes after %v", what, o.n.Load(), d)
	}
}

// BenchmarkProber is the prober's CPU alone: checks at a 10 s interval probe
// endpoints served by another process (pinned by taskset to the core in
// HEALTHROUTE_BENCH_RESPONDER_CPU, default 1; run the benchmark itself pinned to
// another, e.g. taskset -c 0), until b.N probes completed. It reports this process's
// CPU time per probe (and its parts in user space and in the kernel), probes a second per core of it (1e9 / cpu-ns/probe), the cores
// used, the memory each scheduled check holds, and the lag of probe starts (p99 and
// max). 10,000 checks are 1,000 probes a second, 100,000 checks 10,000. https
// probes, each a full TLS handshake on a new connection as Route 53's are, run at
// 1,000 checks: their figure less http's is the handshake's. Each measures b.N probes,
// at most two intervals' worth (ns/op is not reported: the probes keep their schedule).
//
//	taskset -c 0 go test -run '^$' -bench Prober -benchtime 30000x ./health/
func BenchmarkProber(b *testing.B) {
	cpu := os.Getenv("HEALTHROUTE_BENCH_RESPONDER_CPU")
	if cpu == "" {
		cpu = "1"
	}
	for _, typ := range []Type{HTTP, HTTPS, TCP} {
		for _, checks := range []int{1000, 10000, 100000} {
			if (typ == HTTPS) != (checks == 1000) {
				continue // https at 100 handshakes a second, which the endpoints' core keeps up with
			}
			b.Run(fmt.Sprintf("%s/checks=%d", typ, checks), func(b *testing.B) {
				// 64 endpoints: at 10,000 connections a second the 4-tuples of one
				// endpoint's closed connections would outrun the ephemeral ports.
				addrs, pid := benchEndpoints(b, 64, cpu, typ == HTTPS)
				benchProber(b, typ, checks, addrs, pid)
			})
		}
	}
}

// mallocs returns the heap allocations this process has made so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// scheduledMemory is the memory (heap and stacks) that a scheduler holding specs
// takes before any probe: one whose first probes are all due an interval later,
// stopped before then. (Measured on the benchmark's own scheduler, it would count
// the first probes under way by then: at 100,000 checks, thousands.)
func scheduledMemory(specs []*Spec) uint64 {
	s := &Scheduler{Jitter: func(iv time.Duration) time.Duration { return iv }}
	mem0 := memInUse()
	s.Start(context.Background())
	s.Acquire(specs)
	mem := memInUse() - min(mem0, memInUse())
	s.Stop()
	return mem
}

func benchProber(b *testing.B, typ Type, checks int, addrs []string, responder int) {
	const interval = 10 * time.Second
	specs := make([]*Spec, checks)
	for i := range specs {
		specs[i] = &Spec{Name: fmt.Sprintf("c%06d", i), Type: typ, Interval: interval, Fails: 3, Passes: 3,
			Target: addrs[i%len(addrs)]}
		if typ == TCP {
			// Checks of one target and settings share one probe schedule: each tcp
			// check has a timeout of its own, 10 s down to 8.4 s, that loopback never
			// reaches.
			specs[i].Timeout = TCPConnect - time.Duration(i/len(addrs))*time.Millisecond
		}
		switch typ {
		case HTTP:
			specs[i].Target = fmt.Sprintf("http://%s/health/%d", addrs[i%len(addrs)], i)
		case HTTPS:
			specs[i].Target = fmt.Sprintf("https://%s/health/%d", addrs[i%len(addrs)], i)
		}
		specs[i].Seal()
	}
	measured := min(b.N, 2*checks)
	// Measured from the end of the second round of probes: the first is start-up
	// (first results published, probe goroutines and their stacks, the heap grown),
	// and at 100,000 checks on one core its backlog took the next several seconds to
	// drain, so a window right after the first round measured that tail (probes
	// taking a second, waiting for the core) rather than steady probing.
	obs := newPhaseObserver(2*checks, measured)
	s := &Scheduler{Observer: obs} // the automatic bound, as users get it
	var published atomic.Int64
	cancel := s.Subscribe(func(*Snapshot) { published.Add(1) })
	defer cancel()

	mem := scheduledMemory(specs)
	s.Start(context.Background())
	s.Acquire(specs)
	wait(b, obs.warm, 9*interval, "two rounds of probes", obs)
	allocs0 := mallocs()
	user0, sys0 := cpuTimes()
	resp0 := processCPU(responder)
	wall0 := time.Now()
	b.ResetTimer()
	wait(b, obs.done, time.Duration(measured/(checks/10)+3)*interval*2, "measured probes", obs)
	b.StopTimer()
	user, sys := cpuTimes()
	resp := processCPU(responder) - resp0
	allocs := mallocs() - allocs0
	user, sys = user-user0, sys-sys0
	cpu, wall := user+sys, time.Since(wall0)
	s.Stop()

	probes := obs.n.Load() - obs.warmAt
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(probes), "cpu-ns/probe")
	b.ReportMetric(float64(user.Nanoseconds())/float64(probes), "user-ns/probe")
	b.ReportMetric(float64(sys.Nanoseconds())/float64(probes), "sys-ns/probe")
	b.ReportMetric(float64(probes)/cpu.Seconds(), "probes/cpu-s")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
	b.ReportMetric(float64(mem)/float64(checks), "B/check")
	b.ReportMetric(resp.Seconds()/wall.Seconds(), "responder-cores")
	b.ReportMetric(float64(allocs)/float64(probes), "allocs/probe")
	b.ReportMetric(100*float64(obs.failed.Load())/float64(probes), "failed-%")
	// How long a probe took, connect to response: the endpoints' pace as the
	// prober sees it (a loopback probe on idle cores takes well under a millisecond).
	b.ReportMetric(float64(obs.took.Load())/float64(probes)/1e6, "probe-ms")
	obs.mu.Lock()
	lags := slices.Clone(obs.lags)
	obs.mu.Unlock()
	slices.Sort(lags)
	if len(lags) > 0 {
		b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "lag-p99-ms")
		b.ReportMetric(float64(lags[len(lags)-1].Microseconds())/1000, "lag-max-ms")
	}
	var failed int
	var last string
	for _, in := range s.infos() {
		if in.Failures > 0 {
			failed++
			last = in.LastErr
		}
	}
	if failed > checks/100 {
		b.Errorf("%d checks had failed probes against healthy loopback endpoints (one: %s)", failed, last)
	}
}
