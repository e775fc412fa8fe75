package fleet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/health"
)

// The tests in this file run at the timers users get (WAN profile, 1 s heartbeat,
// 5 s suspicion) with checks probed every second at failure_threshold 3, and hold
// that what happens to one member during an outage (a restart, a freeze) never
// changes another member's judgement.

// judge probes like a Scheduler: every interval it feeds the endpoint's result
// (down, as this member sees it) into health.State with threshold fails and tells
// the member, with a Verdict once fails results were counted since the check
// started or its window restarted (OnStale), or the state flipped since.
type judge struct {
	m     *Fleet
	fp    string
	fails int
	down  func() bool

	mu     sync.Mutex
	state  health.State
	window int
	flip   bool
	paused bool

	probes atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

// restart is the Scheduler's RestartWindows for the judge's check.
func (j *judge) restart(fps []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, fp := range fps {
		if fp == j.fp {
			j.state, j.window, j.flip = health.State{Down: j.state.Down}, 0, false
		}
	}
}

// observe counts one probe result (ok: passed) into a check's state and threshold
// window as the Scheduler does, noting a flip.
func observe(st *health.State, window *int, flip *bool, ok bool, fails int) {
	before := st.Down
	*st = st.Observe(ok, fails, fails)
	*window++
	*flip = *flip || st.Down != before
}

func (j *judge) probe() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.paused {
		return // a frozen process probes nothing
	}
	observe(&j.state, &j.window, &j.flip, !j.down(), j.fails)
	// Told under the judge's lock, as the Scheduler tells it under its own.
	j.m.Local(j.fp, health.Status{Seen: true, Down: j.state.Down, Verdict: j.window >= j.fails || j.flip})
	j.probes.Add(1)
}

func (j *judge) pause(on bool) {
	j.mu.Lock()
	j.paused = on
	j.mu.Unlock()
}

// startJudge starts a member like tmpl whose OnStale restarts the judge's window,
// and the judge probing every second.
func startJudge(t *testing.T, n *netsim, tmpl member, fp string, down func() bool) (*Fleet, *judge) {
	t.Helper()
	j := &judge{fp: fp, fails: 3, down: down, done: make(chan struct{})}
	tmpl.onStale = j.restart
	j.m = start(t, n, tmpl)
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel = cancel
	go func() {
		defer close(j.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			j.probe()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(j.stop)
	return j.m, j
}

func (j *judge) stop() {
	j.cancel()
	<-j.done
}

// decidesDown is m's published decision for fp: the status it would answer with.
func decidesDown(m *Fleet, fp string) bool {
	return m.Status(fp, health.Status{Seen: true}).Down
}

// watch samples the decision of each of ms every 20 ms until stop is closed and
// returns how many samples said healthy, with the first such sample described.
func watch(ms []*Fleet, fp string, stop <-chan struct{}) (wrong, samples *atomic.Int64, first *atomic.Value) {
	wrong, samples, first = new(atomic.Int64), new(atomic.Int64), new(atomic.Value)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, m := range ms {
				samples.Add(1)
				if !decidesDown(m, fp) {
					if wrong.Add(1) == 1 {
						first.Store(fmt.Sprintf("%s decided healthy: %+v", m.Name(), m.View(fp)))
					}
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return wrong, samples, first
}

// outage starts three members whose judges see the endpoint down, and waits until
// every member decides down from all three verdicts.
func outage(t *testing.T, n *netsim, fp string, tmpl func(i int) member) ([]*Fleet, []*judge) {
	t.Helper()
	down := func() bool { return true }
	var ms []*Fleet
	var js []*judge
	for i := range 3 {
		m, j := startJudge(t, n, tmpl(i), fp, down)
		ms, js = append(ms, m), append(js, j)
	}
	waitFor(t, 30*time.Second, "every member decides down from three verdicts", func() bool {
		for _, m := range ms {
			if v := m.View(fp); v.Total != 3 || !decidesDown(m, fp) {
				return false
			}
		}
		return true
	})
	return ms, js
}

// TestRestartsDuringOutageDefaults restarts one member of three (as a SIGKILL and
// a start do: no leave message, a new incarnation on the same address) 5 times in
// a row during an outage, and has a fourth member join: the restarted member's
// report is "no verdict yet" (healthy, as a new check, until its threshold window
// completes), counted nowhere, so the other members decide down in every sample.
func TestRestartsDuringOutageDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("5 restarts at the default timers")
	}
	as := addrs(t, 4)
	const fp = "fp-primary"
	ms, js := outage(t, nil, fp, func(i int) member { return joinAll(as[:3], i) })
	stop := make(chan struct{})
	wrong, samples, first := watch(ms[:2], fp, stop)
	down := func() bool { return true }
	for round := range 5 {
		js[2].stop()
		crash(ms[2])
		m, j := startJudge(t, nil, joinAll(as[:3], 2), fp, down)
		ms[2], js[2] = m, j
		// Its first two probes carry no verdict: it must be seen with none, counted
		// nowhere, while the others keep deciding down.
		waitFor(t, 10*time.Second, "the others see the restarted member with no verdict", func() bool {
			for _, r := range ms[0].View(fp).Reports {
				if r.Member == m.Name() && r.Pending && !r.Counted {
					return true
				}
			}
			return false
		})
		waitFor(t, 10*time.Second, "the restarted member's verdict counts", func() bool {
			return ms[0].View(fp).Total == 3 && ms[1].View(fp).Total == 3
		})
		t.Logf("restart %d: the restarted member counted again after %d probes", round+1, j.probes.Load())
	}
	// A member that joins during the outage changes nothing either.
	m, _ := startJudge(t, nil, joinAll(as, 3), fp, down)
	waitFor(t, 15*time.Second, "the new member's verdict counts", func() bool { return ms[0].View(fp).Total == 4 })
	if decidesDown(m, fp) != true {
		t.Errorf("the new member decides healthy with four verdicts of down: %+v", m.View(fp))
	}
	close(stop)
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d of %d samples of the other members decided healthy; first: %s", n, samples.Load(), first.Load())
	}
	t.Logf("%d samples of the two other members, %d healthy", samples.Load(), wrong.Load())
}

// freezer is a member's clock that stands still while the member is frozen, as a
// SIGSTOPped process sees no time pass, and jumps when it resumes.
type freezer struct {
	mu     sync.Mutex
	frozen bool
	at     time.Time
}

func (c *freezer) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return c.at
	}
	return time.Now()
}

func (c *freezer) freeze(on bool) {
	c.mu.Lock()
	c.frozen, c.at = on, time.Now()
	c.mu.Unlock()
}

// TestFrozenMemberDefaults freezes one member of three for 20 s (its clock stands
// still, it probes nothing, nothing reaches it or leaves it), during which the
// endpoint goes down for every member. The other two fail over; when the frozen
// member resumes, its last reports (healthy, from before the outage) are older
// than their freshness bound: it marks them stale before it sends anything, and
// the others never count them, so they decide down in every sample from their
// first failover on. Its next verdict, after a full threshold window, is down.
func TestFrozenMemberDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s freeze")
	}
	as := addrs(t, 3)
	n := &netsim{}
	const fp = "fp-primary"
	var endpointDown atomic.Bool
	clk := &freezer{}
	var ms []*Fleet
	var js []*judge
	for i := range 3 {
		tmpl := joinAll(as, i)
		if i == 2 {
			tmpl.clock = clk.now
		}
		m, j := startJudge(t, n, tmpl, fp, endpointDown.Load)
		ms, js = append(ms, m), append(js, j)
	}
	waitFor(t, 30*time.Second, "every member decides healthy from three verdicts", func() bool {
		for _, m := range ms {
			if v := m.View(fp); v.Total != 3 || decidesDown(m, fp) {
				return false
			}
		}
		return true
	})
	frozen := ms[2]
	before := staleCount(frozen.Name())
	js[2].pause(true)
	clk.freeze(true)
	n.isolate(frozen, true)
	froze := time.Now()
	endpointDown.Store(true)
	waitFor(t, 15*time.Second, "the two others fail over", func() bool { return decidesDown(ms[0], fp) && decidesDown(ms[1], fp) })
	t.Logf("the others failed over %s after the freeze", time.Since(froze).Round(time.Millisecond))
	stop := make(chan struct{})
	wrong, samples, first := watch(ms[:2], fp, stop)
	pause(20*time.Second - time.Since(froze)) // the freeze lasts 20 s: a scenario, not a wait for an event
	clk.freeze(false)
	n.isolate(frozen, false)
	js[2].pause(false)
	resumed := time.Now()
	waitFor(t, 20*time.Second, "the resumed member's verdict (down) counts everywhere", func() bool {
		for _, m := range ms {
			if v := m.View(fp); v.Total != 3 || v.Healthy != 0 {
				return false
			}
		}
		return true
	})
	t.Logf("the resumed member's verdict counted everywhere %s after it resumed", time.Since(resumed).Round(time.Millisecond))
	watchMore := time.NewTimer(2 * time.Second) // keep sampling a little past it
	<-watchMore.C
	close(stop)
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d of %d samples of the other members decided healthy after their failover; first: %s", n, samples.Load(), first.Load())
	}
	if got := staleCount(frozen.Name()) - before; got < 1 {
		t.Errorf("%v of the resumed member's reports were counted as discarded stale, want at least 1", got)
	}
	t.Logf("%d samples of the two other members, %d healthy", samples.Load(), wrong.Load())
}

// staleCount is coredns_healthroute_fleet_stale_reports_total for member.
func staleCount(member string) float64 {
	var m dto.Metric
	staleReports.WithLabelValues(member).Write(&m)
	return m.GetCounter().GetValue()
}

// TestClockOffsetsCountDefaults runs three members whose wall clocks are 1 h
// behind, right, and 10 min ahead, then steps the second back by an hour and the
// third forward by an hour while they run: each counts the others' reports in
// every sample once they have been heard, and the offsets show in
// coredns_healthroute_fleet_clock_offset_seconds.
func TestClockOffsetsCountDefaults(t *testing.T) {
	as := addrs(t, 3)
	const fp = "fp-web"
	var offsets [3]atomic.Int64
	offsets[0].Store(int64(-time.Hour))
	offsets[2].Store(int64(10 * time.Minute))
	var ms []*Fleet
	for i := range 3 {
		tmpl := joinAll(as, i)
		tmpl.wall = func() time.Time { return time.Now().Add(time.Duration(offsets[i].Load())) }
		m, _ := startJudge(t, nil, tmpl, fp, func() bool { return false })
		ms = append(ms, m)
	}
	all := func() bool {
		for _, m := range ms {
			if m.View(fp).Total != 3 {
				return false
			}
		}
		return true
	}
	waitFor(t, 20*time.Second, "every member counts all three", all)
	sample := func(what string) {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := range 100 { // 5 s of samples, 50 ms apart
			if !all() {
				t.Fatalf("%s, sample %d: a member stopped counting another: %+v / %+v / %+v", what, i, ms[0].View(fp), ms[1].View(fp), ms[2].View(fp))
			}
			<-tick.C
		}
	}
	sample("clocks off")
	var g dto.Metric
	clockOffset.WithLabelValues(ms[0].Name()).Write(&g)
	// Seen from the member 10 min ahead, it is 1 h 10 min behind.
	if got := g.GetGauge().GetValue(); got < -4210 || got > -3590 {
		t.Errorf("the clock offset of %s, 1 h behind, is %.0f s", ms[0].Name(), got)
	}
	offsets[1].Add(int64(-time.Hour))
	offsets[2].Add(int64(time.Hour))
	sample("clocks stepped while running")
}
