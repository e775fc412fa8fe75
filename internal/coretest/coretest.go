// Package coretest runs the real CoreDNS binary of this repository (cmd/coredns) for
// end-to-end tests: it builds it once per test process, starts it on a Corefile,
// waits until it answers, and stops it by PID when the test ends.
package coretest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Main runs a package's tests and then removes the binary Binary built, so that a
// test run leaves nothing in the temporary directory. A package whose tests start
// CoreDNS calls it from its TestMain: func TestMain(m *testing.M) { coretest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// Binary builds cmd/coredns (once per test process) and returns the binary's path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = fmt.Errorf("go env GOMOD: %v", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "healthroute-coredns-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "coredns")
		// healthroute_testclock: HEALTHROUTE_TEST_CLOCK_OFFSET sets a fleet member's
		// wall clock off (Options.Env), for the tests of members whose clocks differ.
		cmd := exec.Command("go", "build", "-tags", "healthroute_testclock", "-o", binPath, "./cmd/coredns")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/coredns: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// FreePort returns a loopback port that was free for both TCP and UDP a moment ago,
// for a server a test starts next. It is taken below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), so that no connection's source port can take it
// between this call and the server's bind: a fleet of processes opening connections
// draws source ports from that range, and a port found free there by listening on
// port 0 was sometimes taken by one of them first ("address already in use"). A
// process never gets the same port twice.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := freePortRange()
	portsMu.Lock()
	defer portsMu.Unlock()
	start := lo + rand.IntN(hi-lo)
	for i := range hi - lo {
		port := lo + (start-lo+i)%(hi-lo)
		if handedOut[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		handedOut[port] = true
		return port
	}
	t.Fatalf("no free port in %d-%d", lo, hi)
	return 0
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// freePortRange is where FreePort looks: the 10,000 ports below the ephemeral
// range's start, or from 1024 when the range starts lower than 11024.
func freePortRange() (lo, hi int) {
	hi = 32768 // Linux's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				hi = n
			}
		}
	}
	return max(1024, hi-10000), max(hi, 1025)
}

// Server is a running CoreDNS process.
type Server struct {
	Addr    string // DNS address, 127.0.0.1:PORT
	Dir     string // working directory, holding the Corefile
	Cmd     *exec.Cmd
	First   *dns.Msg // the reply to Start's probe query: the server's first answer
	mu      sync.Mutex
	output  bytes.Buffer
	stopped bool
	exited  chan error
}

// Stop stops the server by PID now (SIGTERM, so it shuts down as on a restart; SIGKILL
// after 10 s), rather than when the test ends.
func (s *Server) Stop() { s.stop(s.exited) }

// Output returns what the server printed so far.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.output.String()
}

type lockedWriter struct{ s *Server }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.output.Write(p)
}

// Start writes corefile into a temporary directory, runs CoreDNS on it and waits
// (up to 30 s) until a query for probe (a name with type A) gets any answer on
// 127.0.0.1:port. The process is stopped by PID when the test ends.
func Start(t testing.TB, corefile string, port int, probe string) *Server {
	t.Helper()
	return StartWith(t, corefile, port, probe, Options{})
}

// Options change how StartWith runs the binary.
type Options struct {
	// NoFile, when not 0, is the process's limit of open files (RLIMIT_NOFILE, soft
	// and hard, so Go cannot raise it), set by a shell's ulimit that then execs the
	// binary in its place (same PID).
	NoFile int
	// Env is added to the process's environment (KEY=VALUE).
	Env []string
}

// StartWith is Start with options.
func StartWith(t testing.TB, corefile string, port int, probe string, opt Options) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir}
	s.Cmd = exec.Command(bin, "-conf", path)
	if opt.NoFile > 0 {
		s.Cmd = exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, opt.NoFile), bin, "-conf", path)
	}
	s.Cmd.Dir = dir
	if len(opt.Env) > 0 {
		s.Cmd.Env = append(os.Environ(), opt.Env...)
	}
	s.Cmd.Stdout, s.Cmd.Stderr = lockedWriter{s}, lockedWriter{s}
	if err := s.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	s.exited = exited
	go func() { exited <- s.Cmd.Wait() }()
	t.Cleanup(func() { s.stop(exited) })

	c := &dns.Client{Timeout: 200 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(probe), dns.TypeA)
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond) // paces tries against a refused port
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("coredns exited before serving: %v\n%s", err, s.Output())
		default:
		}
		if r, _, err := c.Exchange(m, s.Addr); err == nil {
			s.First = r
			return s
		}
		<-tick.C
	}
	t.Fatalf("coredns did not answer on %s within 30s\n%s", s.Addr, s.Output())
	return nil
}

// Reload sends SIGUSR1 (CoreDNS reloads its Corefile on it) after writing corefile.
func (s *Server) Reload(t testing.TB, corefile string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Dir, "Corefile"), []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) stop(exited chan error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.mu.Unlock()
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(s.Cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// Query sends one question over UDP and returns the reply.
func (s *Server) Query(t testing.TB, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, s.Addr)
	if err != nil {
		t.Fatalf("query %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// WaitFor queries name/qtype until cond holds for a reply, failing the test after
// within. Each failed try waits for the next of at most every 50 ms.
func (s *Server) WaitFor(t testing.TB, name string, qtype uint16, within time.Duration, what string, cond func(*dns.Msg) bool) *dns.Msg {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last *dns.Msg
	for {
		last = s.Query(t, name, qtype)
		if cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last answer:\n%v\nserver output:\n%s", what, within, last, s.Output())
		}
		<-tick.C
	}
}
