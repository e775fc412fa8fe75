package health

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFlipToPublish times flip-to-publish: from a probe result that flips a
// check (recorded as the scheduler records it) until a subscriber is given a
// snapshot with the check's new state, with checks checks held, every one seen.
// spaced: a flip every 100 ms (single changes on a quiet scheduler); back-to-back:
// each flip as soon as the one before was published (the most a stream of flips
// can get). It reports the latency's p50, p99 and max and the publications a
// second; ns/op is the time per flip, pauses included.
//
//	go test -run '^$' -bench FlipToPublish -benchtime 50x ./health/
func BenchmarkFlipToPublish(b *testing.B) {
	for _, checks := range []int{10000, 100000} {
		for _, pause := range []time.Duration{100 * time.Millisecond, 0} {
			name := "spaced"
			if pause == 0 {
				name = "back-to-back"
			}
			b.Run(fmt.Sprintf("%s/checks=%d", name, checks), func(b *testing.B) {
				benchFlipToPublish(b, checks, pause)
			})
		}
	}
}

func benchFlipToPublish(b *testing.B, checks int, pause time.Duration) {
	s := &Scheduler{}
	specs := make([]*Spec, checks)
	for i := range specs {
		specs[i] = &Spec{Name: fmt.Sprintf("c%06d", i), Type: HTTP, Interval: 10 * time.Second,
			Fails: 1, Passes: 1, Target: fmt.Sprintf("http://192.0.2.1/health/%d", i)}
		specs[i].Seal()
	}
	s.Acquire(specs)
	entries := make([]*entry, checks)
	for i, sp := range specs {
		entries[i] = s.checks[sp.Fingerprint()]
	}
	var target atomic.Pointer[string]
	var wantDown atomic.Bool
	seen := make(chan struct{}, 1)
	var pubs atomic.Int64
	defer s.Subscribe(func(snap *Snapshot) {
		pubs.Add(1)
		fp := target.Load()
		if fp == nil && snap.Len() == checks || fp != nil && snap.Status(*fp).Down == wantDown.Load() && snap.Status(*fp).Seen {
			select {
			case seen <- struct{}{}:
			default:
			}
		}
	})()
	for _, e := range entries { // first results: seen once a snapshot holds them all
		s.record(e, nil, 0, Phases{})
	}
	waitPublished := func(what string) {
		select {
		case <-seen:
		case <-time.After(10 * time.Second):
			b.Fatalf("%s not published within 10 s", what)
		}
	}
	waitPublished("first results")
	lat := make([]time.Duration, 0, b.N)
	pubs0, wall0 := pubs.Load(), time.Now()
	b.ResetTimer()
	for i := range b.N {
		e := entries[(i*7919)%checks]
		fp := e.spec.Fingerprint()
		down := !e.info.State.Down
		wantDown.Store(down)
		target.Store(&fp)
		var err error
		if down {
			err = errFail
		}
		t0 := time.Now()
		s.record(e, err, 0, Phases{})
		waitPublished(fmt.Sprintf("flip %d", i))
		lat = append(lat, time.Since(t0))
		if pause > 0 {
			time.Sleep(pause) // the spacing of the flips, not a wait for an event
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds())/1e3, "max-us")
	b.ReportMetric(float64(pubs.Load()-pubs0)/time.Since(wall0).Seconds(), "pubs/s")
}
