package percpu

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestSlotsCountEveryAdd: series added to from goroutines on every P sum to what was
// added, whether a slot or the caller's slice took each count, and a series keeps its
// slot once it has one.
func TestSlotsCountEveryAdd(t *testing.T) {
	const series, workers, per = 200, 8, 5000 // more series than a P has slots
	s := NewSlots()
	slice := make([]uint64, series)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				n := int32((i*7 + w) % series)
				if i%3 == 0 {
					n = 5 // a popular series
				}
				if !s.Add(n) {
					mu.Lock()
					slice[n]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	total := slice
	inSlots := uint64(0)
	s.Each(func(n int32, v uint64) { total[n] += v; inSlots += v })
	sum := uint64(0)
	for _, v := range total {
		sum += v
	}
	if sum != workers*per {
		t.Errorf("counted %d, want %d", sum, workers*per)
	}
	want5 := uint64(0)
	for w := range workers {
		for i := range per {
			if i%3 == 0 || (i*7+w)%series == 5 {
				want5++
			}
		}
	}
	if total[5] != want5 {
		t.Errorf("series 5: %d, want %d", total[5], want5)
	}
	if inSlots == 0 || inSlots == workers*per {
		t.Errorf("%d of %d counts in slots: want some in slots and some in the slice (%d series, %d slots a P)", inSlots, workers*per, series, slotsPerP)
	}
	if !s.Add(5) {
		t.Error("series 5 lost its slot")
	}
}

// TestSlotsTake: Take empties the slots of the series it is asked for, hands their
// counts over, and leaves the others.
func TestSlotsTake(t *testing.T) {
	s := NewSlots()
	for range 10 {
		s.Add(1)
		s.Add(2)
	}
	moved := map[int32]uint64{}
	s.Take(func(n int32) bool { return n == 1 }, func(n int32, v uint64) { moved[n] += v })
	left := map[int32]uint64{}
	s.Each(func(n int32, v uint64) { left[n] += v })
	if moved[1] != 10 || moved[2] != 0 || left[1] != 0 || left[2] != 10 {
		t.Errorf("moved %v, left %v; want series 1's 10 moved and series 2's 10 left", moved, left)
	}
}

// BenchmarkSlotsAddParallel adds to one series from every P: per-P slots against one
// shared counter.
func BenchmarkSlotsAddParallel(b *testing.B) {
	s := NewSlots()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Add(3)
		}
	})
}

// BenchmarkSharedAddParallel is the same with one counter that every P writes: the
// line the slots avoid.
func BenchmarkSharedAddParallel(b *testing.B) {
	var n atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Add(1)
		}
	})
}
