//go:build unix

package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
)

// exhaustFDs lowers the soft limit on open files below every free descriptor
// number, so that this process's next socket() fails with EMFILE as it does when a
// flood of connections has taken them all; descriptors open now stay usable, and
// none closed later (a finished test's connections) can be taken again. The
// returned function restores the limit. Tests calling it must not be parallel: the
// limit is the whole test binary's.
func exhaustFDs(t *testing.T) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = 3 // stdin, stdout and stderr
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Error(err)
		}
	}
}

// fillFDs lowers the soft limit on open files to the descriptors open now plus a
// few, and opens the null device on every number left below it, as a flood of
// connections takes them all. The returned function closes those and restores the
// limit. Tests calling it must not be parallel.
func fillFDs(t *testing.T) (restore func()) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("open descriptors not listed on this system: %v", err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(ents) + 4) // at least 4 free: new descriptors take the lowest numbers
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var fill []*os.File
	restore = func() {
		for _, f := range fill {
			f.Close()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Error(err)
		}
	}
	for range low.Cur {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			return restore
		}
		if err != nil {
			restore()
			t.Fatal(err)
		}
		fill = append(fill, f)
	}
	restore()
	t.Fatalf("descriptors did not run out under a limit of %d", low.Cur)
	return nil
}

// With every descriptor taken, probes run on the reserve: each takes a reserved
// descriptor's number and the reserve is refilled from the one it frees. With the
// reserve emptied, the probe has no result.
func TestProbeOutOfDescriptorsUsesReserve(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // never accepts: connections complete in the backlog
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sp := &Spec{Name: "tcp", Type: TCP, Target: ln.Addr().String(), Timeout: 5 * time.Second}
	sp.Seal()
	c, err := NewChecker(sp, testAgent)
	if err != nil {
		t.Fatal(err)
	}
	var s Scheduler
	fdReserve.fill()
	restore := fillFDs(t)
	defer restore()
	for i := range 2 * reserveFDs {
		if _, _, err := s.probe(t.Context(), c, sp); err != nil {
			t.Fatalf("probe %d out of descriptors: %v; want it run on the reserve", i, err)
		}
		fdReserve.fill() // as the scheduler does after each probe
	}
	if n := fdReserve.size(); n != reserveFDs {
		t.Errorf("reserve holds %d after the probes; want it refilled to %d", n, reserveFDs)
	}
	// Out of the reserve too: its descriptors stay open, but no longer for probes.
	fdReserve.mu.Lock()
	held := fdReserve.files
	fdReserve.files = nil
	fdReserve.mu.Unlock()
	_, _, err = s.probe(t.Context(), c, sp)
	for _, f := range held {
		f.Close()
	}
	restore()
	fdReserve.fill()
	if !isLocal(err) {
		t.Fatalf("probe out of descriptors and reserve: %v; want a local error", err)
	}
}

// localTargets starts a healthy endpoint of every probed type on loopback and
// returns a spec for each.
func localTargets(t *testing.T) []*Spec {
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(httpSrv.Close)
	httpsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(httpsSrv.Close)
	promSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0"]}}`))
	}))
	t.Cleanup(promSrv.Close)
	ws, _ := wsServer(t, false, func(c *websocket.Conn, r *http.Request) { c.Read(r.Context()) })
	grpcAddr, _ := grpcServer(t, false, false)
	tcpAddr := rawServer(t, func(net.Conn, <-chan struct{}) {})
	specs := []*Spec{
		{Name: "http", Type: HTTP, Target: httpSrv.URL},
		{Name: "https", Type: HTTPS, Target: httpsSrv.URL},
		{Name: "tcp", Type: TCP, Target: tcpAddr},
		{Name: "websocket", Type: WebSocket, Target: "ws" + ws.URL[len("http"):]},
		{Name: "grpc", Type: GRPC, Target: "grpc://" + grpcAddr},
		{Name: "prometheus", Type: Prometheus, Target: promSrv.URL, Query: "up"},
	}
	for _, sp := range specs {
		sp.Timeout = 5 * time.Second
		sp.Seal()
	}
	return specs
}

// With this process out of file descriptors, a probe of every type has no result
// (IsLocal) instead of failing its endpoint; with descriptors back, it passes.
func TestProbeOutOfDescriptorsIsLocal(t *testing.T) {
	var s Scheduler
	for _, sp := range localTargets(t) {
		t.Run(sp.Name, func(t *testing.T) {
			c, err := NewChecker(sp, testAgent)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.probe(t.Context(), c, sp); err != nil {
				t.Fatalf("probe of a healthy endpoint failed: %v", err)
			}
			restore := exhaustFDs(t)
			_, _, err = s.probe(t.Context(), c, sp)
			restore()
			if !isLocal(err) {
				t.Fatalf("probe out of descriptors: %v; want a local error", err)
			}
			if _, _, err := s.probe(t.Context(), c, sp); err != nil {
				t.Fatalf("probe with descriptors back failed: %v", err)
			}
		})
	}
}

// Out of descriptors, the resolver says only that a name was not found; a probe of
// a target by name then has no result instead of failing. With descriptors, a
// lookup failure is the endpoint's. (Out of descriptors the resolver cannot send
// a query, so the name never leaves the process.)
func TestProbeLookupOutOfDescriptorsIsLocal(t *testing.T) {
	notFound := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}
	if outOfFDs(notFound) {
		t.Errorf("a lookup failure with descriptors free counted as out of descriptors")
	}
	sp := &Spec{Name: "by name", Type: TCP, Target: "probe-target.invalid:80", Timeout: 5 * time.Second}
	sp.Seal()
	c, err := NewChecker(sp, testAgent)
	if err != nil {
		t.Fatal(err)
	}
	var s Scheduler
	restore := exhaustFDs(t)
	_, _, err = s.probe(t.Context(), c, sp)
	restore()
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !isLocal(err) {
		t.Fatalf("probe of a name out of descriptors: %v; want a lookup failure marked local", err)
	}
}

// chanObserver reports skipped and passed probes on channels, dropping what no one
// waits for.
type chanObserver struct {
	passed, skipped chan string
	mu              sync.Mutex
	failed          int
}

func (o *chanObserver) Started(*Spec, time.Duration) {}
func (o *chanObserver) Changed(*Spec, bool)          {}
func (o *chanObserver) Probed(sp *Spec, err error, _ time.Duration) {
	if err != nil {
		o.mu.Lock()
		o.failed++
		o.mu.Unlock()
		return
	}
	select {
	case o.passed <- sp.Name:
	default:
	}
}
func (o *chanObserver) Skipped(sp *Spec, _ error) {
	select {
	case o.skipped <- sp.Name:
	default:
	}
}

// waitNames waits for n names on ch, up to d.
func waitNames(t *testing.T, ch <-chan string, n int, d time.Duration, what string) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for i := range n {
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%d of %d %s within %s", i, n, what, d)
		}
	}
}

// A running check out of descriptors for more probes than its failure threshold
// stays healthy, with no failure counted; it passes again once descriptors are
// back. The interval is the least allowed, 100 ms, to see several probes in a
// short test; TestSchedulerLocalErrorKeepsState runs the defaults.
func TestSchedulerOutOfDescriptors(t *testing.T) {
	sp := &Spec{Name: "tcp", Type: TCP, Target: rawServer(t, func(net.Conn, <-chan struct{}) {}),
		Interval: MinInterval, Fails: 1}
	sp.Seal()
	obs := &chanObserver{passed: make(chan string, 1), skipped: make(chan string, 1)}
	s := &Scheduler{Observer: obs}
	s.Acquire([]*Spec{sp})
	s.Start(t.Context())
	defer s.Stop()
	waitNames(t, obs.passed, 1, 5*time.Second, "passing probes")

	restore := exhaustFDs(t)
	func() {
		defer restore()
		waitNames(t, obs.skipped, 4, 5*time.Second, "probes skipped out of descriptors")
	}()
	in, _ := s.Info(sp.Fingerprint())
	if in.State.Down || in.Failures != 0 || in.LocalErrors < 4 {
		t.Errorf("after 4 probes out of descriptors: down %v, %d failures, %d local errors; want up, none, at least 4",
			in.State.Down, in.Failures, in.LocalErrors)
	}
	waitNames(t, obs.passed, 1, 5*time.Second, "passing probes with descriptors back")
}

// At the defaults (30 s interval, 3 failures), a check whose probes fail locally
// keeps its state however long that lasts: healthy stays healthy, down stays down.
func TestSchedulerLocalErrorKeepsState(t *testing.T) {
	emfile := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	for _, start := range []error{nil, errFail} {
		t.Run(fmt.Sprintf("after %v", start), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				next := start
				obs := newRecObserver()
				s := &Scheduler{Observer: obs, NewChecker: func(*Spec) (Checker, error) {
					return CheckFunc(func(context.Context) error { mu.Lock(); defer mu.Unlock(); return next }), nil
				}}
				sp := testSpec("a", 0, 0, 0)
				s.Acquire([]*Spec{sp})
				s.Start(context.Background())
				defer s.Stop()
				advance(3 * DefaultInterval)
				before, _ := s.Info(sp.Fingerprint())
				mu.Lock()
				next = emfile
				mu.Unlock()
				advance(10 * DefaultInterval)
				after, _ := s.Info(sp.Fingerprint())
				if after.State.Down != before.State.Down || after.Probes != before.Probes || after.LocalErrors != 10 {
					t.Errorf("10 local errors moved the check: before %+v, after %+v", before.State, after.State)
				}
				if n := obs.skipped["a"]; n != 10 {
					t.Errorf("observer told of %d skipped probes; want 10", n)
				}
			})
		})
	}
}

func TestIsLocal(t *testing.T) {
	dial := func(errno syscall.Errno) error {
		return fmt.Errorf("connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)})
	}
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errFail, false},
		{dial(syscall.EMFILE), true},
		{dial(syscall.ENFILE), true},
		{dial(syscall.ENOBUFS), true},
		{dial(syscall.EADDRNOTAVAIL), true},
		{dial(syscall.ECONNREFUSED), false},
		{dial(syscall.ETIMEDOUT), false},
		{dial(syscall.EHOSTUNREACH), false},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Err: "dial udp 127.0.0.53:53: socket: too many open files", Name: "example.org"}}, true},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "example.org", IsNotFound: true}}, false},
		{localError{errors.New("rpc error: code = Unavailable")}, true},
		{fmt.Errorf("no result within 1s: %w", localError{errFail}), true},
		{context.DeadlineExceeded, false},
	}
	for _, tc := range tests {
		if got := isLocal(tc.err); got != tc.want {
			t.Errorf("IsLocal(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}

// TestStopClosesReserve: the descriptors Start reserves for probes are closed by
// Stop, so a server whose last healthroute block is gone holds none of them.
func TestStopClosesReserve(t *testing.T) {
	s := &Scheduler{NewChecker: func(*Spec) (Checker, error) {
		return CheckFunc(func(context.Context) error { return nil }), nil
	}}
	s.Acquire([]*Spec{testSpec("a", time.Second, 1, 1)})
	s.Start(t.Context())
	if n := fdReserve.size(); n != reserveFDs {
		t.Fatalf("reserve holds %d after Start; want %d", n, reserveFDs)
	}
	s.Stop()
	if n := fdReserve.size(); n != 0 {
		t.Errorf("reserve holds %d after Stop; want 0", n)
	}
}
