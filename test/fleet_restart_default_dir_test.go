package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// withRoot sets m's server root (CoreDNS's root directive) to dir: where a process
// restarted by an orchestrator finds what it left, as its working directory is.
func (m *fleetMember) withRoot(dir string) {
	m.corefile = strings.Replace(m.corefile, "\tbind 127.0.0.1\n", "\tbind 127.0.0.1\n\troot "+dir+"\n", 1)
}

// TestFleetRestartDuringOutageDefaultDataDir: three members (default fleet timers,
// interval 1 s, failure_threshold 3), none with a data_dir, each with its own
// server root; the endpoint is down and every member answers the secondary. One
// member is SIGKILLed and started again on the same root: it kept its judged state
// in the default data directory (healthroute-data under the root), so its first
// answer and every answer after it is the secondary, before it has heard the
// others and before its own threshold window completes.
func TestFleetRestartDuringOutageDefaultDataDir(t *testing.T) {
	coretest.Binary(t) // build before timing anything
	ep := newFleetEndpoint(t, "")
	ep.down.Store(true)
	ms := fleetMembersProbing(t, 3, ep.URL, "interval 1s\n\t\t\tfailure_threshold 3")
	roots := make([]string, len(ms))
	for i, m := range ms {
		roots[i] = t.TempDir()
		m.withRoot(roots[i])
		m.start(t)
	}
	diag := func() string {
		var b strings.Builder
		for _, m := range ms {
			b.WriteString(m.name + "'s view: ")
			if v := m.fleetView(); v != nil {
				b.WriteString(v.Decision)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	fleetWait(t, 30*time.Second, "every member answers the secondary from three verdicts", func() bool {
		for _, m := range ms {
			if v := m.fleetView(); v == nil || v.Total != 3 || m.answer(t) != fleetSecondary {
				return false
			}
		}
		return true
	}, diag)
	c := ms[2]
	saved := filepath.Join(roots[2], "healthroute-data", "healthroute-checks.json")
	fleetWait(t, 10*time.Second, "the restarted member's judged state (down) is saved in the default data directory", func() bool {
		b, err := os.ReadFile(saved)
		return err == nil && strings.Contains(string(b), `"down":true`)
	}, c.srv.Output)
	c.kill(t)
	c.start(t)
	if got := firstA(c.srv.First); got != fleetSecondary {
		t.Fatalf("the restarted member's first answer is %q, want the secondary %s\n%s", got, fleetSecondary, c.srv.Output())
	}
	s := sampleAnswers([]*fleetMember{c}, false)
	fleetWait(t, 30*time.Second, "the restarted member counts three verdicts again", func() bool {
		v := c.fleetView()
		return v != nil && v.Total == 3
	}, diag)
	if wrong, summary := s.stop(); wrong > 0 {
		t.Errorf("the restarted member answered the dead primary %d times: %s", wrong, summary)
	} else {
		t.Logf("the restarted member: %s", summary)
	}
}

// TestDefaultDataDirNotWritableWarns: a server whose root is not a directory it
// can create the default data directory in (a file here) starts, answers, and
// says in a warning that the judged states are kept in memory only.
func TestDefaultDataDirNotWritableWarns(t *testing.T) {
	ep := newFleetEndpoint(t, "")
	file := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	port := coretest.FreePort(t)
	srv := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	root %s
	healthroute {
		check web http %s/ {
			interval 1s
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
	}
}`, port, file, ep.URL), port, "www.example.org")
	want := "the default data directory " + filepath.Join(file, "healthroute-data") + " cannot be written"
	fleetWait(t, 10*time.Second, "the warning", func() bool { return strings.Contains(srv.Output(), want) }, srv.Output)
	if got := firstA(srv.Query(t, "www.example.org", dns.TypeA)); got != fleetPrimary {
		t.Errorf("answer %q, want the primary %s", got, fleetPrimary)
	}
}
