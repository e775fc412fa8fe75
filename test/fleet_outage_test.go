package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// The tests in this file run three CoreDNS processes with the fleet block users
// write (default timers: WAN profile, heartbeat 1s, suspicion 5s) and a failover
// record whose primary's check (http, failure_threshold 3) every member probes, and
// hold that what happens to one member during an outage (restarts, a freeze) never
// makes another answer the dead primary.

// fleetView is m's /v1/checks view of the fleet's arithmetic for the check, nil
// when the API does not answer.
func (m *fleetMember) fleetView() *view.Fleet {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/checks", m.api))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct{ Checks []view.Check }
	if json.NewDecoder(resp.Body).Decode(&v) != nil || len(v.Checks) != 1 {
		return nil
	}
	return v.Checks[0].Fleet
}

// reportOf returns v's report of member name, if it holds one.
func reportOf(v *view.Fleet, name string) (view.FleetMember, bool) {
	if v != nil {
		for _, r := range v.Members {
			if r.Member == name {
				return r, true
			}
		}
	}
	return view.FleetMember{}, false
}

// answerSampler queries members for www.example.org A every 20 ms, from start until
// stop, and counts the answers with the primary's address (bad): after the member's
// first answer with the secondary when afterFailover, else all of them.
type answerSampler struct {
	bad      string // the answer that is wrong
	mu       sync.Mutex
	samples  map[string]int
	wrong    map[string]int
	failed   map[string]int // queries with no answer
	first    map[string]string
	done     chan struct{}
	finished chan struct{}
}

func sampleAnswers(ms []*fleetMember, afterFailover bool) *answerSampler {
	return sampleAnswersBut(ms, fleetPrimary, afterFailover)
}

// sampleAnswersBut is sampleAnswers counting the answers with bad as wrong.
func sampleAnswersBut(ms []*fleetMember, bad string, afterFailover bool) *answerSampler {
	s := &answerSampler{bad: bad, samples: map[string]int{}, wrong: map[string]int{}, failed: map[string]int{}, first: map[string]string{},
		done: make(chan struct{}), finished: make(chan struct{})}
	addrs := map[string]string{} // by name: fixed across restarts, read here once
	for _, m := range ms {
		addrs[m.name] = fmt.Sprintf("127.0.0.1:%d", m.dns)
	}
	go func() {
		defer close(s.finished)
		c := &dns.Client{Timeout: time.Second}
		failedOver := map[string]bool{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, m := range ms {
				q := new(dns.Msg)
				q.SetQuestion("www.example.org.", dns.TypeA)
				r, _, err := c.Exchange(q, addrs[m.name])
				got := ""
				if err == nil {
					got = firstA(r)
				}
				s.mu.Lock()
				s.samples[m.name]++
				switch {
				case err != nil:
					s.failed[m.name]++
				case got == s.bad && (failedOver[m.name] || !afterFailover):
					if s.wrong[m.name]++; s.wrong[m.name] == 1 {
						s.first[m.name] = time.Now().Format("15:04:05.000")
					}
				case got == fleetSecondary:
					failedOver[m.name] = true
				}
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns a summary; wrong is the number of answers
// with the primary that should not have been.
func (s *answerSampler) stop() (wrong int, summary string) {
	close(s.done)
	<-s.finished
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for name, n := range s.samples {
		wrong += s.wrong[name]
		fmt.Fprintf(&b, "%s: %d samples, %d answered %s (first at %s), %d unanswered; ", name, n, s.wrong[name], s.bad, s.first[name], s.failed[name])
	}
	return wrong, b.String()
}

// kill sends m's process SIGKILL and waits until it is gone (its ports free).
func (m *fleetMember) kill(t *testing.T) {
	t.Helper()
	pid := m.srv.Cmd.Process.Pid
	if err := m.srv.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	fleetWait(t, 10*time.Second, m.name+" exits", func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH },
		func() string { return m.srv.Output() })
}

// outageFleet starts three members probing an endpoint that is down, with the
// given check settings, and waits until every member answers the secondary and
// counts all three verdicts.
func outageFleet(t *testing.T, settings string, within time.Duration) (*fleetEndpoint, []*fleetMember, func() string) {
	t.Helper()
	coretest.Binary(t) // build before timing anything
	ep := newFleetEndpoint(t, "")
	ep.down.Store(true)
	ms := fleetMembersProbing(t, 3, ep.URL, settings)
	diag := func() string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s's view: %+v\n", m.name, m.fleetView())
		}
		return b.String()
	}
	for _, m := range ms {
		m.start(t)
	}
	fleetWait(t, within, "every member answers the secondary from three verdicts", func() bool {
		for _, m := range ms {
			if v := m.fleetView(); v == nil || v.Total != 3 || m.answer(t) != fleetSecondary {
				return false
			}
		}
		return true
	}, diag)
	return ep, ms, diag
}

// restartsDuringOutage restarts the third member (SIGKILL, start) rounds times while
// the others' answers are sampled; each round waits until the others see the
// restarted member with no verdict yet, then until settle says the round is done.
func restartsDuringOutage(t *testing.T, settings string, rounds int, settle func(ms []*fleetMember) bool, within time.Duration) {
	_, ms, diag := outageFleet(t, settings, within)
	others, b := ms[:2], ms[2]
	s := sampleAnswers(others, false)
	var restarted *answerSampler
	for round := range rounds {
		killed := time.Now()
		b.kill(t)
		b.start(t)
		if restarted == nil {
			restarted = sampleAnswers([]*fleetMember{b}, false)
		}
		fleetWait(t, within, "the others show the restarted member with no verdict yet", func() bool {
			r, ok := reportOf(others[0].fleetView(), b.name)
			return ok && r.NoVerdict && !r.Counted
		}, diag)
		fleetWait(t, within, "the round settles", func() bool { return settle(ms) }, diag)
		t.Logf("restart %d: %s up and settled %s after its SIGKILL", round+1, b.name, time.Since(killed).Round(time.Millisecond))
	}
	wrong, summary := s.stop()
	_, own := restarted.stop()
	t.Logf("the other members: %s", summary)
	t.Logf("the restarted member itself (not asserted: before it hears the others it knows no verdict): %s", own)
	if wrong > 0 {
		t.Errorf("the other members answered the dead primary %d times: %s\n%s", wrong, summary, diag())
	}
}

// TestFleetRestartsDuringOutage: the primary's target is down and every member
// answers the secondary; one member is restarted (SIGKILL, start) 5 times in a row,
// each time until its verdict counts again everywhere. The restarted member's
// report carries no verdict until its threshold window completes (3 probes), so it
// counts nowhere meanwhile and the other two never answer the primary.
func TestFleetRestartsDuringOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes, 5 restarts")
	}
	restartsDuringOutage(t, "interval 1s\n\t\t\tfailure_threshold 3", 5, func(ms []*fleetMember) bool {
		for _, m := range ms {
			if v := m.fleetView(); v == nil || v.Total != 3 {
				return false
			}
		}
		return true
	}, 30*time.Second)
}

// TestFleetRestartsDuringOutageInterval10s is TestFleetRestartsDuringOutage with the
// check probed every 10 s. To keep it to about two minutes, a round ends one
// interval after the others first show the restarted member with no verdict (its
// threshold window then still has two probes to go, the time the answers were
// wrong before), not once its verdict counts (30 s a round).
func TestFleetRestartsDuringOutageInterval10s(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes, 5 restarts at a 10 s interval")
	}
	var since time.Time
	restartsDuringOutage(t, "interval 10s\n\t\t\tfailure_threshold 3", 5, func(ms []*fleetMember) bool {
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) < 10*time.Second {
			return false
		}
		since = time.Time{}
		return true
	}, 60*time.Second)
}

// frozenMember freezes the third member (SIGSTOP) for freeze while the target goes
// down, then continues it (SIGCONT), and holds that the other two never answer
// the primary after their first failover, until the resumed member's own verdict
// (down) counts everywhere.
func frozenMember(t *testing.T, settings string, freeze, within time.Duration) {
	coretest.Binary(t)
	ep := newFleetEndpoint(t, "")
	ms := fleetMembersProbing(t, 3, ep.URL, settings)
	diag := func() string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s's view: %+v\n", m.name, m.fleetView())
		}
		return b.String()
	}
	for _, m := range ms {
		m.start(t)
	}
	fleetWait(t, within, "every member answers the primary from three verdicts", func() bool {
		for _, m := range ms {
			if v := m.fleetView(); v == nil || v.Total != 3 || m.answer(t) != fleetPrimary {
				return false
			}
		}
		return true
	}, diag)
	others, c := ms[:2], ms[2]
	pid := c.srv.Cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // so that it can be stopped by its PID
	ep.down.Store(true)
	s := sampleAnswers(others, true)
	fleetWait(t, within, "the others fail over", func() bool {
		return others[0].answer(t) == fleetSecondary && others[1].answer(t) == fleetSecondary
	}, diag)
	t.Logf("the others failed over %s after the SIGSTOP", time.Since(stopped).Round(time.Millisecond))
	wait := time.NewTimer(freeze - time.Since(stopped)) // the freeze's length: a scenario, not a wait for an event
	<-wait.C
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	fleetWait(t, within, "the resumed member's verdict (down) counts everywhere", func() bool {
		for _, m := range ms {
			if v := m.fleetView(); v == nil || v.Total != 3 || v.Healthy != 0 {
				return false
			}
		}
		return true
	}, diag)
	t.Logf("the resumed member's verdict counted everywhere %s after SIGCONT", time.Since(resumed).Round(time.Millisecond))
	wrong, summary := s.stop()
	t.Logf("the other members: %s", summary)
	if wrong > 0 {
		t.Errorf("the other members answered the dead primary %d times after failing over: %s\n%s", wrong, summary, diag())
	}
	if v := c.fleetView(); v == nil || v.Total != 3 || c.answer(t) != fleetSecondary {
		t.Errorf("the resumed member: view %+v", v)
	}
}

// TestFleetFrozenMember: SIGSTOP one member of three for 20 s while the target goes
// down (interval 1 s, failure_threshold 3), then SIGCONT; frozenRuns times in a row,
// each with a fleet of its own.
func TestFleetFrozenMember(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes, a 20 s freeze")
	}
	for run := range frozenRuns(t) {
		t.Run(fmt.Sprintf("run=%d", run+1), func(t *testing.T) {
			frozenMember(t, "interval 1s\n\t\t\tfailure_threshold 3", 20*time.Second, 30*time.Second)
		})
	}
}

// TestFleetFrozenMemberInterval10s is TestFleetFrozenMember with the check probed
// every 10 s and a 40 s freeze: a report stays fresh for 3 intervals and 2
// heartbeats (32 s here), so a shorter freeze leaves the frozen member's last
// report fresh, and counted, by definition.
func TestFleetFrozenMemberInterval10s(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes, a 40 s freeze")
	}
	frozenMember(t, "interval 10s\n\t\t\tfailure_threshold 3", 40*time.Second, 60*time.Second)
}
