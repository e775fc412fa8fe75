package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestRestartKeepsJudgedState restarts an instance whose primary's target is down,
// first by SIGKILL (the state file as last saved while it ran), then by SIGTERM (the
// state saved on shutdown): from its first answer after each start it answers the
// secondary, where a new check would answer the primary until failure_threshold
// probes had failed. The interval is 1 s so that the outage is judged within seconds.
func TestRestartKeepsJudgedState(t *testing.T) {
	web := newFlipServer(t, false)
	dataDir := t.TempDir()
	port := coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		data_dir %s
		check web http %s/health {
			interval 1s
			failure_threshold 3
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
	}
}`, port, dataDir, web.URL)
	const primary, secondary = "192.0.2.1", "198.51.100.1"
	isA := func(want string) func(*dns.Msg) bool { return func(m *dns.Msg) bool { return firstA(m) == want } }

	srv := coretest.Start(t, corefile, port, "www.example.org")
	srv.WaitFor(t, "www.example.org", dns.TypeA, 10*time.Second, "the primary while its target is up", isA(primary))
	web.ok.Store(false)
	srv.WaitFor(t, "www.example.org", dns.TypeA, 15*time.Second, "failover to the secondary", isA(secondary))
	waitUntil(t, 10*time.Second, "the state file says the check is down", func() bool { return savedDown(t, dataDir) == 1 },
		func() string {
			b, _ := os.ReadFile(filepath.Join(dataDir, "healthroute-checks.json"))
			return string(b)
		})

	if err := srv.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "the killed process exits", func() bool { return processGone(srv.Cmd.Process.Pid) }, func() string { return "" })
	srv = coretest.Start(t, corefile, port, "www.example.org")
	assertAnswersFromStart(t, srv, secondary, "after SIGKILL")

	srv.Stop() // SIGTERM: the shutdown saves the states once more
	srv = coretest.Start(t, corefile, port, "www.example.org")
	assertAnswersFromStart(t, srv, secondary, "after SIGTERM")

	// The restored state is a judgement, not a pin: the target's recovery brings the
	// primary back after the usual run of passing probes.
	web.ok.Store(true)
	srv.WaitFor(t, "www.example.org", dns.TypeA, 15*time.Second, "the primary after its target recovers", isA(primary))
	if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// assertAnswersFromStart checks the server's first answer and every answer over the
// next 2 s (two probe intervals: its own probes run meanwhile and keep failing).
func assertAnswersFromStart(t *testing.T, srv *coretest.Server, want, when string) {
	t.Helper()
	if got := firstA(srv.First); got != want {
		t.Fatalf("%s: the first answer is %q, want %s (the state saved before the restart)\n%s", when, got, want, srv.Output())
	}
	deadline := time.Now().Add(2 * time.Second)
	for n := 0; time.Now().Before(deadline) && n < 1000; n++ {
		if got := firstA(srv.Query(t, "www.example.org", dns.TypeA)); got != want {
			t.Fatalf("%s: answer %d is %q, want %s", when, n, got, want)
		}
	}
}

// savedDown counts the checks the state file in dir saves as down; -1 when it cannot
// be read yet.
func savedDown(t *testing.T, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "healthroute-checks.json"))
	if err != nil {
		return -1
	}
	var f struct {
		Checks map[string]struct{ Down bool } `json:"checks"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("the state file is not JSON: %v\n%s", err, b)
	}
	n := 0
	for _, c := range f.Checks {
		if c.Down {
			n++
		}
	}
	return n
}
