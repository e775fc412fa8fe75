package health

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countObserver counts probes and closes done when the count reaches target.
type countObserver struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
	once   sync.Once
}

func (o *countObserver) Probed(*Spec, error, time.Duration) {
	if o.n.Add(1) == o.target {
		o.once.Do(func() { close(o.done) })
	}
}
func (o *countObserver) Changed(*Spec, bool)          {}
func (o *countObserver) Started(*Spec, time.Duration) {}
func (o *countObserver) Skipped(*Spec, error)         {}

// httpResponders starts n minimal HTTP/1.1 endpoints on loopback: read the request
// head, answer 200, close. Minimal so that the benchmark measures the prober.
func httpResponders(b *testing.B, n int) []string {
	serve := func(c net.Conn, _ <-chan struct{}) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReaderSize(c, 1024)
		for range 32 { // the request head, bounded
			line, err := br.ReadSlice('\n')
			if err != nil || len(line) <= 2 {
				break
			}
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK")
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = rawServer(b, serve)
	}
	return addrs
}

func cpuTime() time.Duration {
	user, sys := cpuTimes()
	return user + sys
}

// cpuTimes returns this process's CPU time so far in user space and in the kernel.
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkScheduler10k schedules 10,000 http checks at a 10 s interval against
// loopback endpoints, with jittered starts, and runs until b.N probes completed
// (10,000 probes take one interval). It reports the CPU time per probe (this
// process: prober and the minimal responders), the cores used at the 10 s
// interval, the memory each scheduled check holds (heap and stacks) and all the
// memory the process got from the OS.
//
//	go test -run '^$' -bench Scheduler10k -benchtime 20000x ./health/
func BenchmarkScheduler10k(b *testing.B) {
	const checks = 10000
	const interval = 10 * time.Second
	addrs := httpResponders(b, 16)
	specs := make([]*Spec, checks)
	for i := range specs {
		specs[i] = &Spec{Name: fmt.Sprintf("c%05d", i), Type: HTTP, Interval: interval, Fails: 3, Passes: 3,
			Target: fmt.Sprintf("http://%s/health/%d", addrs[i%len(addrs)], i)}
		specs[i].Seal()
	}
	obs := &countObserver{target: int64(b.N), done: make(chan struct{})}
	s := &Scheduler{Observer: obs} // the automatic bound, as users get it
	published := atomic.Int64{}
	cancel := s.Subscribe(func(*Snapshot) { published.Add(1) })
	defer cancel()

	mem0 := memInUse()
	cpu0, wall0 := cpuTime(), time.Now()
	b.ResetTimer()
	s.Start(context.Background())
	s.Acquire(specs)
	select {
	case <-obs.done:
	case <-time.After(time.Duration(b.N/checks+3) * interval * 2):
		b.Errorf("only %d of %d probes in time", obs.n.Load(), b.N)
	}
	b.StopTimer()
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	mem := memInUse() - min(mem0, memInUse())
	s.Stop()

	probes := obs.n.Load()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(probes), "cpu-ns/probe")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
	b.ReportMetric(float64(mem)/checks, "B/check")
	b.ReportMetric(float64(published.Load()), "publications")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/1e6, "MB-sys")
	var failed int
	for _, in := range s.infos() {
		if in.Failures > 0 {
			failed++
		}
	}
	if probes >= checks && failed > checks/100 {
		b.Errorf("%d checks had failed probes against healthy loopback endpoints", failed)
	}
}
