package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// route53Version is a one-record export whose www.example.com. TXT says v.
func route53Version(v int) string {
	return fmt.Sprintf(`{"ResourceRecordSets": [
	{"Name": "www.example.com.", "Type": "TXT", "TTL": 30, "ResourceRecords": [{"Value": "\"v%d\""}]}
]}`, v)
}

// writeRoute53Version replaces the export at path with route53Version(v), by rename
// as a deployment tool would.
func writeRoute53Version(t *testing.T, path string, v int) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(route53Version(v)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// reloadLeftovers reads the server's goroutines (go_goroutines, from its metrics)
// and open descriptors.
func reloadLeftovers(t *testing.T, s *coretest.Server, metrics string) (goroutines, fds int) {
	t.Helper()
	fams, _ := scrape(t, metrics)
	return int(metricValue(fams, "go_goroutines", nil)), coretest.OpenFiles(s.Cmd.Process.Pid)
}

// The route53 watcher keeps working after manual reloads (SIGUSR1): it restarts the
// instance running now, not the one that started it. Then the export is rewritten
// every 150 ms while SIGUSR1 comes every 400 ms, and once more during a last
// SIGUSR1's reload: reloads run one at a time, the last version is answered within
// two watch periods, and afterwards the server holds no more goroutines or
// descriptors than before.
func TestRoute53WatcherAfterManualReloads(t *testing.T) {
	dir := t.TempDir()
	records := filepath.Join(dir, "zone.json")
	write := func(v int) { writeRoute53Version(t, records, v) }
	write(0)
	port, metricsPort := coretest.FreePort(t), coretest.FreePort(t)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	corefile := fmt.Sprintf("example.com:%d {\n\tbind 127.0.0.1\n\tprometheus 127.0.0.1:%d\n\thealthroute {\n\t\troute53 {\n\t\t\trecords %s\n\t\t}\n\t}\n}\n",
		port, metricsPort, records)
	s := coretest.Start(t, corefile, port, "www.example.com")
	answers := func(v int) func(*dns.Msg) bool {
		return func(m *dns.Msg) bool {
			return len(m.Answer) == 1 && strings.Contains(m.Answer[0].String(), fmt.Sprintf(`"v%d"`, v))
		}
	}
	reloads := func() int { return strings.Count(s.Output(), "Reloading complete") }
	s.WaitFor(t, "www.example.com.", dns.TypeTXT, time.Second, "v0", answers(0))
	g0, f0 := reloadLeftovers(t, s, metrics)

	for v := 1; v <= 3; v++ {
		n := reloads()
		s.Reload(t, corefile)
		coretest.WaitUntil(t, 10*time.Second, "the manual reload", func() bool { return reloads() > n }, s.Output)
		write(v)
		s.WaitFor(t, "www.example.com.", dns.TypeTXT, watchPeriod+3*time.Second,
			fmt.Sprintf("v%d, written after manual reload %d", v, v), answers(v))
	}

	// Writes every 150 ms and SIGUSR1 every 400 ms, for 6 s.
	writes, signals := time.NewTicker(150*time.Millisecond), time.NewTicker(400*time.Millisecond)
	end := time.After(6 * time.Second)
	v := 3
racing:
	for range 1000 { // bounded; end stops it after 6 s
		select {
		case <-writes.C:
			v++
			write(v)
		case <-signals.C:
			if err := s.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
		case <-end:
			break racing
		}
	}
	writes.Stop()
	signals.Stop()
	// One more version, written while the reload of a last SIGUSR1 runs: it is
	// applied after that reload, by it or by the watcher's next check.
	if err := s.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	v++
	write(v)
	last := time.Now()
	s.WaitFor(t, "www.example.com.", dns.TypeTXT, 2*watchPeriod+2*time.Second, fmt.Sprintf("the last version, v%d", v), answers(v))
	t.Logf("v%d, the last of %d versions, answered %s after it was written; %d reloads completed",
		v, v+1, time.Since(last).Round(time.Millisecond), reloads())
	if out := s.Output(); strings.Contains(out, "use of closed network connection") {
		t.Errorf("a reload went through a closed instance:\n%s", out)
	}

	// Reloads finish, and shut down what they replaced, asynchronously.
	var g, f int
	coretest.WaitUntil(t, 10*time.Second, "goroutines and descriptors back to their level before the reloads",
		func() bool { g, f = reloadLeftovers(t, s, metrics); return g <= g0 && f <= f0 },
		func() string {
			return fmt.Sprintf("goroutines %d (before %d), descriptors %d (before %d)", g, g0, f, f0)
		})
	t.Logf("goroutines %d (before %d), descriptors %d (before %d)", g, g0, f, f0)
}
