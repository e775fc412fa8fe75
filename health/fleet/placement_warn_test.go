package fleet

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/healthroute/healthroute/health"
)

// logLines collects what the package logs while a test runs (tests of this package
// run one at a time), and discards it again after.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// count is how many lines logged so far hold s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func captureLog(t *testing.T) *logLines {
	l := &logLines{}
	clog.SetOutput(l)
	t.Cleanup(clog.Discard)
	return l
}

// placedSpec is a check as the Corefile parser makes it, defined at origin.
func placedSpec(name string, checkers int, origin string) *health.Spec {
	s := &health.Spec{Name: name, Type: health.HTTP, Target: "http://192.0.2.1/" + name, Interval: time.Second,
		Checkers: checkers, Origin: origin}
	s.Seal()
	return s
}

// TestWarnMoreCheckersThanMembersDefaults: on 3 members at the timers users get, a
// check asking for 5 checkers is placed on all 3, and each member warns once, after
// a suspicion, naming the check's Corefile line; a check probed by every member
// draws no warning in a fleet this small.
func TestWarnMoreCheckersThanMembersDefaults(t *testing.T) {
	logs := captureLog(t)
	ms := cluster(t, nil, 3, member{regions: []string{"a", "b", "c"}})
	big, all := placedSpec("big", 5, "Corefile:9"), placedSpec("all", 0, "Corefile:14")
	const want = "Corefile:9: check big: checkers 5: only 3 members this one reaches may probe: all of them do"
	waitForDetail(t, 3*defaultSuspicion, "each of the 3 members warns about check big", func() bool {
		for _, m := range ms {
			m.Probes(big)
			m.Probes(all)
		}
		return logs.count(want) >= 3
	}, func() string { return ":\n" + logs.String() })
	for _, m := range ms {
		if !m.Probes(big) || len(m.Checkers(big)) != 3 {
			t.Errorf("%s: big placed on %v, want all 3 members", m.Name(), m.Checkers(big))
		}
	}
	if n := logs.count(want); n != 3 {
		t.Errorf("the warning about big logged %d times, want once by each of 3 members:\n%s", n, logs)
	}
	if n := logs.count("members each probe it"); n != 0 {
		t.Errorf("a fleet of 3 warned that checks are probed by every member:\n%s", logs)
	}
}

// TestWarnLargeFleetProbedByAllDefaults: in a fleet of LargeFleet+1 members at the
// timers users get, a check without checkers or regions makes each member warn,
// once, naming its Corefile line, that every member probes it; a check on 3
// checkers does not.
func TestWarnLargeFleetProbedByAllDefaults(t *testing.T) {
	logs := captureLog(t)
	size := LargeFleet + 1
	ms := cluster(t, nil, size, member{})
	placed, all := placedSpec("placed", 3, "Corefile:9"), placedSpec("all", 0, "Corefile:14")
	want := "Corefile:14: check all: fleet: 11 members each probe it (and any other check without checkers or regions): its endpoint gets 11 probes an interval"
	waitForDetail(t, 3*defaultSuspicion, "each member warns that every member probes check all", func() bool {
		for _, m := range ms {
			m.Probes(placed)
			m.Probes(all)
		}
		return logs.count(want) >= size
	}, func() string { return ":\n" + logs.String() })
	for _, m := range ms {
		m.Probes(all)
	}
	if n := logs.count(want); n != size {
		t.Errorf("the warning logged %d times, want once by each of %d members:\n%s", n, size, logs)
	}
	if n := logs.count("check placed: fleet"); n != 0 {
		t.Errorf("a check on 3 checkers drew the warning:\n%s", logs)
	}
}
