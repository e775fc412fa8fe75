package health

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

var errFail = errors.New("scripted failure")

// probeLog records when each check's probes started, in fake time since t0.
type probeLog struct {
	mu     sync.Mutex
	t0     time.Time
	starts map[string][]time.Duration
}

func newProbeLog() *probeLog {
	return &probeLog{t0: time.Now(), starts: map[string][]time.Duration{}}
}

func (l *probeLog) add(name string) {
	l.mu.Lock()
	l.starts[name] = append(l.starts[name], time.Since(l.t0))
	l.mu.Unlock()
}

func (l *probeLog) get(name string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.starts[name]...)
}

// testSpec returns a sealed tcp spec; the scheduler never dials it, tests give
// it a fake checker.
func testSpec(name string, interval time.Duration, fails, passes int) *Spec {
	s := &Spec{Name: name, Type: TCP, Target: "192.0.2.1:" + name, Interval: interval, Fails: fails, Passes: passes}
	s.Seal()
	return s
}

// advance moves fake time on by d and lets every goroutine settle.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestSchedulerJitterSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plog := newProbeLog()
		s := &Scheduler{NewChecker: func(sp *Spec) (Checker, error) {
			return CheckFunc(func(context.Context) error { plog.add(sp.Name); return nil }), nil
		}}
		var specs []*Spec
		for i := range 200 {
			specs = append(specs, testSpec(fmt.Sprint(i), 10*time.Second, 3, 3))
		}
		s.Acquire(specs)
		s.Start(context.Background())
		defer s.Stop()
		advance(10*time.Second - time.Nanosecond)
		var buckets [10]int
		for _, sp := range specs {
			st := plog.get(sp.Name)
			if len(st) != 1 {
				t.Fatalf("check %s probed %d times in its first interval; want once", sp.Name, len(st))
			}
			buckets[st[0]/time.Second]++
		}
		for i, n := range buckets {
			if n == 0 || n > 50 {
				t.Errorf("second %d of the interval has %d first probes of 200; want them spread (%v)", i, n, buckets)
			}
		}
	})
}

func TestSchedulerIntervalAfterCompletion(t *testing.T) {
	tests := []struct {
		name     string
		took     time.Duration
		interval time.Duration
		want     []time.Duration
	}{
		{"instant probes", 0, 10 * time.Second, []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second}},
		{"3s probes", 3 * time.Second, 10 * time.Second, []time.Duration{0, 13 * time.Second, 26 * time.Second}},
		{"probes longer than the interval", 1500 * time.Millisecond, time.Second, []time.Duration{0, 2500 * time.Millisecond, 5 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				plog := newProbeLog()
				s := &Scheduler{
					Jitter: func(time.Duration) time.Duration { return 0 },
					NewChecker: func(sp *Spec) (Checker, error) {
						return CheckFunc(func(ctx context.Context) error {
							plog.add(sp.Name)
							time.Sleep(tc.took) // the endpoint's (fake) response time
							return nil
						}), nil
					},
				}
				sp := testSpec("a", tc.interval, 3, 3)
				sp.Timeout = time.Minute
				s.Acquire([]*Spec{sp})
				s.Start(context.Background())
				defer s.Stop()
				advance(30*time.Second + time.Millisecond)
				got := plog.get("a")
				if len(got) < len(tc.want) {
					t.Fatalf("probe starts %v; want them to begin %v", got, tc.want)
				}
				for i, w := range tc.want {
					if got[i] != w {
						t.Errorf("probe %d started at %s; want %s (all: %v)", i, got[i], w, got)
					}
				}
				in, _ := s.Info(sp.Fingerprint())
				if in.LastLatency != tc.took {
					t.Errorf("LastLatency %s; want %s", in.LastLatency, tc.took)
				}
			})
		})
	}
}

func TestSchedulerInFlightBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var now, peak, probes atomic.Int64
		s := &Scheduler{
			MaxInFlight: 3,
			Jitter:      func(time.Duration) time.Duration { return 0 },
			NewChecker: func(sp *Spec) (Checker, error) {
				return CheckFunc(func(ctx context.Context) error {
					n := now.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					probes.Add(1)
					<-ctx.Done() // a hung endpoint: only the budget ends the probe
					now.Add(-1)
					return ctx.Err()
				}), nil
			},
		}
		var specs []*Spec
		for i := range 10 {
			sp := testSpec(fmt.Sprint(i), time.Minute, 1, 1)
			sp.Timeout = time.Second
			specs = append(specs, sp)
		}
		s.Acquire(specs)
		s.Start(context.Background())
		defer s.Stop()
		advance(time.Millisecond)
		if n, m := now.Load(), s.InFlight(); n != 3 || m != 3 {
			t.Errorf("%d probes in flight at once (InFlight %d); want the bound, 3", n, m)
		}
		// 10 hung checks, 3 at a time, 1 s each: all probed once after 4 s.
		advance(4 * time.Second)
		if p := peak.Load(); p != 3 {
			t.Errorf("peak in flight %d; want 3", p)
		}
		if n := probes.Load(); n != 10 {
			t.Errorf("%d probes after 4s; want each of 10 checks once", n)
		}
		for _, sp := range specs {
			in, _ := s.Info(sp.Fingerprint())
			if in.LastLatency != time.Second {
				t.Errorf("check %s: probe took %s; want its 1s budget exactly", sp.Name, in.LastLatency)
			}
			if !in.State.Down || in.LastErr == "" {
				t.Errorf("check %s: %+v; want down with the timeout as its error", sp.Name, in)
			}
		}
	})
}

func TestSchedulerThresholds(t *testing.T) {
	tests := []struct {
		name          string
		results       string // p pass, f fail, n no data
		fails, passes int
		nodata        NoData
		want          string // published state after each probe: u up, d down
	}{
		{"failure threshold", "fffpp", 3, 3, 0, "uuddd"},
		{"recovery threshold", "ffpppp", 2, 3, 0, "udddu" + "u"},
		{"recovery defaults to failure threshold", "ffpp", 2, 0, 0, "uddu"},
		{"no data, last known, no history: healthy", "nnn", 1, 1, LastKnown, "uuu"},
		{"no data, last known, after a failure", "fnnp", 1, 1, LastKnown, "dddu"},
		{"no data treated unhealthy", "pn", 1, 1, NoDataUnhealthy, "ud"},
		{"no data treated healthy", "fn", 1, 1, NoDataHealthy, "du"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var i atomic.Int64
				s := &Scheduler{
					Jitter: func(time.Duration) time.Duration { return 0 },
					NewChecker: func(sp *Spec) (Checker, error) {
						return CheckFunc(func(context.Context) error {
							switch tc.results[i.Add(1)-1] {
							case 'f':
								return errFail
							case 'n':
								return ErrNoData
							}
							return nil
						}), nil
					},
				}
				sp := testSpec("a", time.Second, tc.fails, tc.passes)
				sp.NoData = tc.nodata
				sp.Seal()
				var got []*Snapshot
				cancel := s.Subscribe(func(snap *Snapshot) { got = append(got, snap) })
				defer cancel()
				s.Acquire([]*Spec{sp})
				s.Start(context.Background())
				defer s.Stop()
				t0 := time.Now()
				for k := range tc.results {
					advance(time.Millisecond)
					snap := s.Snapshot()
					st := snap.Status(sp.Fingerprint())
					if !st.Seen {
						t.Fatalf("probe %d: not seen", k)
					}
					if d := st.Down; d != (tc.want[k] == 'd') {
						t.Fatalf("after probe %d (%c): down=%t; want %c", k, tc.results[k], d, tc.want[k])
					}
					in, _ := s.Info(sp.Fingerprint())
					if tc.results[k] == 'f' && in.LastErr != errFail.Error() {
						t.Errorf("probe %d: LastErr %q", k, in.LastErr)
					}
					if k > 0 && tc.want[k] != tc.want[k-1] {
						if want := t0.Add(time.Duration(k) * time.Second); !in.LastChange.Equal(want) || !st.Since.Equal(want) {
							t.Errorf("probe %d: LastChange %s, Since %s; want %s", k, in.LastChange, st.Since, want)
						}
					}
					advance(time.Second - time.Millisecond)
				}
				for k := 1; k < len(got); k++ {
					if got[k-1] != nil && got[k].Gen <= got[k-1].Gen {
						t.Errorf("publication %d has Gen %d after %d", k, got[k].Gen, got[k-1].Gen)
					}
				}
			})
		})
	}
}

func TestSchedulerReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plog := newProbeLog()
		s := &Scheduler{
			Jitter: func(time.Duration) time.Duration { return 0 },
			NewChecker: func(sp *Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error { plog.add("probe"); return errFail }), nil
			},
		}
		old := testSpec("a", 10*time.Second, 1, 1)
		s.Acquire([]*Spec{old})
		s.Start(context.Background())
		defer s.Stop()
		advance(4 * time.Second)
		fp := old.Fingerprint()
		if !s.Snapshot().Status(fp).Down {
			t.Fatal("check not down after its first failure")
		}

		// Reload: the new instance acquires an equal definition, then the old releases.
		same := testSpec("a-renamed", 10*time.Second, 1, 1)
		same.Name, same.Target = "a-renamed", old.Target
		same.Seal()
		if same.Fingerprint() != fp {
			t.Fatal("the name must not change the fingerprint")
		}
		added := testSpec("b", 10*time.Second, 1, 1)
		s.Acquire([]*Spec{same, added})
		s.Release([]*Spec{old})
		advance(time.Millisecond)
		if n := len(plog.get("probe")); n != 2 {
			t.Errorf("%d probes right after reload; want the kept check's 1 and the added one's 1", n)
		}
		in, ok := s.Info(fp)
		if !ok || !in.State.Down || in.Probes != 1 || in.Spec.Name != "a-renamed" {
			t.Errorf("kept check after reload: %+v; want its state and count carried over, under its new name", in)
		}
		advance(6*time.Second - 2*time.Millisecond) // t = 10s - 1ms: no extra probe yet
		if n := len(plog.get("probe")); n != 2 {
			t.Errorf("%d probes before the kept check's interval ends; want 2", n)
		}
		advance(2 * time.Millisecond)
		if n := len(plog.get("probe")); n != 3 {
			t.Errorf("%d probes at t=10s; want the kept check's schedule to continue", n)
		}

		s.Release([]*Spec{same, added})
		if n := s.running(); n != 0 {
			t.Errorf("%d checks running after the last release", n)
		}
		if st := s.Snapshot().Status(fp); st.Seen {
			t.Errorf("released check still published: %+v", st)
		}
		before := len(plog.get("probe"))
		advance(time.Minute)
		if n := len(plog.get("probe")); n != before {
			t.Errorf("%d probes after release; want none", n-before)
		}
	})
}

func TestSchedulerBadChecker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler{Jitter: func(time.Duration) time.Duration { return 0 }}
		sp := &Spec{Name: "bad", Type: HTTP, Target: "http://%zz", Interval: time.Second, Fails: 1, Passes: 1}
		sp.Seal()
		s.Acquire([]*Spec{sp})
		s.Start(context.Background())
		defer s.Stop()
		advance(time.Millisecond)
		in, _ := s.Info(sp.Fingerprint())
		if !in.State.Down || in.LastErr == "" {
			t.Errorf("unbuildable check: %+v; want down with the reason", in)
		}
	})
}

func TestSchedulerPanickingProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler{
			Jitter:     func(time.Duration) time.Duration { return 0 },
			NewChecker: func(*Spec) (Checker, error) { return CheckFunc(func(context.Context) error { panic("boom") }), nil },
		}
		sp := testSpec("a", time.Second, 1, 1)
		s.Acquire([]*Spec{sp})
		s.Start(context.Background())
		defer s.Stop()
		advance(2*time.Second + time.Millisecond)
		in, _ := s.Info(sp.Fingerprint())
		if in.Probes != 3 || in.LastErr != "probe panicked" {
			t.Errorf("after panicking probes: %+v; want 3 failed probes and the scheduler alive", in)
		}
	})
}

// flipAggregator reports every check down while down is set, whatever the local view.
// It keeps the count of local reports.
type flipAggregator struct {
	mu    sync.Mutex
	down  bool
	local int
}

func (a *flipAggregator) Local(_ string, st Status) {
	a.mu.Lock()
	a.local++
	a.mu.Unlock()
}
func (a *flipAggregator) Status(fp string, st Status) Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.Down = st.Down || a.down
	return st
}

func TestSchedulerAggregator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agg := &flipAggregator{}
		s := &Scheduler{
			Aggregator: agg,
			Jitter:     func(time.Duration) time.Duration { return 0 },
			NewChecker: func(*Spec) (Checker, error) { return CheckFunc(func(context.Context) error { return nil }), nil },
		}
		a, b := testSpec("a", time.Second, 1, 1), testSpec("b", time.Second, 1, 1)
		s.Acquire([]*Spec{a, b})
		s.Start(context.Background())
		defer s.Stop()
		advance(time.Millisecond)
		gen := s.Snapshot().Gen
		advance(3 * time.Second)
		if g := s.Snapshot().Gen; g != gen {
			t.Errorf("Gen moved %d -> %d with no status change; want no publication", gen, g)
		}
		agg.mu.Lock()
		agg.down = true
		agg.mu.Unlock()
		s.Republish()
		snap := s.Snapshot()
		if snap.Gen != gen+1 || !snap.Status(a.Fingerprint()).Down || !snap.Status(b.Fingerprint()).Down {
			t.Errorf("after Republish: gen %d, a %+v; want one publication with both down", snap.Gen, snap.Status(a.Fingerprint()))
		}
		s.RepublishChecks([]string{a.Fingerprint()})
		if g := s.Snapshot().Gen; g != gen+1 {
			t.Errorf("a no-op RepublishChecks published (gen %d)", g)
		}
	})
}

// TestSchedulerCoalesce holds the subscriber inside one publication while 50 checks
// change, and expects at most one more publication to carry all of them. The first
// publication may already cover all 50 (when it was the one the pace put on a timer,
// every change marked meanwhile is folded into it), never fewer than all in the end.
func TestSchedulerCoalesce(t *testing.T) {
	s := &Scheduler{}
	var specs []*Spec
	for i := range 50 {
		specs = append(specs, testSpec(fmt.Sprint(i), time.Second, 1, 1))
	}
	s.Acquire(specs)
	gate, entered := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var pubs []*Snapshot
	first := true
	cancel := s.Subscribe(func(snap *Snapshot) {
		if snap == nil {
			return
		}
		mu.Lock()
		pubs = append(pubs, snap)
		hold := first
		first = false
		mu.Unlock()
		if hold {
			close(entered)
			<-gate
		}
	})
	defer cancel()
	var wg sync.WaitGroup
	for _, sp := range specs {
		e := s.checks[sp.Fingerprint()]
		wg.Add(1)
		go func() { defer wg.Done(); s.record(e, errFail, 0, Phases{}) }()
	}
	<-entered
	marked := func() uint64 { s.mu.Lock(); defer s.mu.Unlock(); return s.want }
	coretest.WaitUntil(t, 10*time.Second, "all 50 changes recorded", func() bool { return marked() >= 50 },
		func() string { return fmt.Sprintf("%d requests marked", marked()) })
	close(gate)
	wg.Wait()
	// What is left may be published by the pace's timer, after every record returned.
	down := func() (n int) {
		s.Snapshot().Each(func(_ string, st Status) {
			if st.Down {
				n++
			}
		})
		return n
	}
	coretest.WaitUntil(t, 10*time.Second, "a publication with all 50 checks down", func() bool { return down() == 50 },
		func() string { return fmt.Sprintf("%d checks down", down()) })
	mu.Lock()
	defer mu.Unlock()
	if len(pubs) > 2 {
		t.Errorf("%d publications for 50 changes held behind one; want at most 2", len(pubs))
	}
	last := pubs[len(pubs)-1]
	if last != s.Snapshot() {
		t.Fatalf("the last publication is not the scheduler's snapshot")
	}
	if last.Len() != 50 {
		t.Fatalf("last snapshot has %d checks; want 50", last.Len())
	}
	if len(pubs) == 2 {
		changed := 0
		last.Diff(pubs[0], func(string) { changed++ })
		if changed != 50-pubs[0].Len() {
			t.Errorf("Diff between the two publications: %d checks; want %d", changed, 50-pubs[0].Len())
		}
	}
}

func TestSchedulerAcquireAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int64
		s := &Scheduler{
			Jitter: func(time.Duration) time.Duration { return 0 },
			NewChecker: func(*Spec) (Checker, error) {
				return CheckFunc(func(context.Context) error { probes.Add(1); return nil }), nil
			},
		}
		s.Start(context.Background())
		s.Stop()
		s.Acquire([]*Spec{testSpec("a", time.Second, 1, 1)})
		advance(time.Minute)
		if n := probes.Load(); n != 0 {
			t.Errorf("%d probes by a stopped scheduler", n)
		}
		// synctest.Test fails if a goroutine outlives the bubble: none may be started.
	})
}
