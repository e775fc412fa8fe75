package health

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// startupSample follows a sample of the checks through start-up: when each one's
// first result came (the end of its first probe) and when the first snapshot
// holding it was published. The subscriber looks up only the sampled checks not
// yet published, so following them costs little beside a publication.
type startupSample struct {
	n       int           // checks in all
	idx     map[*Spec]int // sampled spec -> index
	fps     []string
	result  []atomic.Int64 // unix ns of the first result, 0 before
	pending []int          // sampled indexes not yet published (subscriber only)
	pubAt   []time.Time    // when each sampled check was first published
	pubs    atomic.Int64
	all     chan struct{} // closed once a snapshot holds every check
	allAt   time.Time
}

func newStartupSample(specs []*Spec, every int) *startupSample {
	ss := &startupSample{n: len(specs), idx: map[*Spec]int{}, all: make(chan struct{})}
	for i := 0; i < len(specs); i += every {
		ss.idx[specs[i]] = len(ss.fps)
		ss.pending = append(ss.pending, len(ss.fps))
		ss.fps = append(ss.fps, specs[i].Fingerprint())
	}
	ss.result = make([]atomic.Int64, len(ss.fps))
	ss.pubAt = make([]time.Time, len(ss.fps))
	return ss
}

// wrap returns c, noting when a sampled spec's first probe ends.
func (ss *startupSample) wrap(sp *Spec, c Checker) Checker {
	i, ok := ss.idx[sp]
	if !ok {
		return c
	}
	return CheckFunc(func(ctx context.Context) error {
		err := c.Check(ctx)
		ss.result[i].CompareAndSwap(0, time.Now().UnixNano())
		return err
	})
}

// published is the scheduler's subscriber.
func (ss *startupSample) published(snap *Snapshot) {
	if snap == nil {
		return
	}
	ss.pubs.Add(1)
	now := time.Now()
	ss.pending = slices.DeleteFunc(ss.pending, func(i int) bool {
		if snap.Status(ss.fps[i]).Seen {
			ss.pubAt[i] = now
			return true
		}
		return false
	})
	if ss.allAt.IsZero() && snap.Len() == ss.n {
		ss.allAt = now
		close(ss.all)
	}
}

// delays returns how long each sampled check's first result waited to be
// published, sorted.
func (ss *startupSample) delays() []time.Duration {
	var out []time.Duration
	for i := range ss.fps {
		if r := ss.result[i].Load(); r != 0 && !ss.pubAt[i].IsZero() {
			out = append(out, max(0, ss.pubAt[i].Sub(time.Unix(0, r))))
		}
	}
	slices.Sort(out)
	return out
}

// BenchmarkStartup times a scheduler's start-up: from Start until a published
// snapshot holds every check's first result, with the process's CPU time in that
// span, the publications it took, and how long a first result waited to be
// published (p99 and max over a sample of 256 checks). Each check's first result
// changes its published status (it becomes seen), as a flip does.
//
// burst: every check due at once (no start jitter) and a probe that returns at
// once, so that the time is the scheduler's and its publications' alone. http:
// checks at Route 53's 10 s interval with the default start jitter, probing the
// endpoints of a responder process as BenchmarkProber does (run pinned there too):
// every first result is due within 10 s, so the time beyond 10 s is start-up
// backlog.
//
//	taskset -c 0 go test -run '^$' -bench Startup -benchtime 1x ./health/
func BenchmarkStartup(b *testing.B) {
	cpu := os.Getenv("HEALTHROUTE_BENCH_RESPONDER_CPU")
	if cpu == "" {
		cpu = "1"
	}
	for _, checks := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("burst/checks=%d", checks), func(b *testing.B) {
			benchStartup(b, checks, nil)
		})
	}
	for _, checks := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("http/checks=%d", checks), func(b *testing.B) {
			benchStartup(b, checks, responderProcess(b, 64, cpu, false))
		})
	}
}

// benchStartup runs b.N start-ups of checks checks: http ones against addrs, or,
// with no addrs, ones whose probe passes at once, all due at once.
func benchStartup(b *testing.B, checks int, addrs []string) {
	const interval = 10 * time.Second
	var wall, cpu time.Duration
	var pubs int64
	var delays []time.Duration
	for range b.N {
		specs := make([]*Spec, checks)
		for i := range specs {
			specs[i] = &Spec{Name: fmt.Sprintf("c%06d", i), Type: HTTP, Interval: interval, Fails: 3, Passes: 3,
				Target: fmt.Sprintf("http://192.0.2.1/health/%d", i)}
			if addrs != nil {
				specs[i].Target = fmt.Sprintf("http://%s/health/%d", addrs[i%len(addrs)], i)
			}
			specs[i].Seal()
		}
		ss := newStartupSample(specs, max(1, checks/256))
		s := &Scheduler{NewChecker: func(sp *Spec) (Checker, error) {
			if addrs == nil {
				return ss.wrap(sp, CheckFunc(func(context.Context) error { return nil })), nil
			}
			c, err := NewChecker(sp, UserAgent(""))
			if err != nil {
				return nil, err
			}
			return ss.wrap(sp, c), nil
		}}
		if addrs == nil {
			s.Jitter = func(time.Duration) time.Duration { return 0 }
		}
		cancel := s.Subscribe(ss.published)
		s.Acquire(specs)
		cpu0, wall0 := cpuTime(), time.Now()
		s.Start(context.Background())
		select {
		case <-ss.all:
		case <-time.After(20 * interval):
			b.Fatalf("no snapshot with all %d checks after %v", checks, 20*interval)
		}
		cpu += cpuTime() - cpu0
		wall += ss.allAt.Sub(wall0)
		s.Stop()
		cancel()
		pubs += ss.pubs.Load()
		delays = append(delays, ss.delays()...)
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(wall.Seconds()/n, "s-to-published")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s")
	b.ReportMetric(float64(pubs)/n, "publications")
	slices.Sort(delays)
	if len(delays) > 0 {
		b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds())/1000, "wait-p99-ms")
		b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "wait-max-ms")
	}
}
