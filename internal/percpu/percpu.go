// Package percpu counts where a query runs: counters that every query adds to are kept
// per P (the Go scheduler's processor, one per core in use), so that queries on
// different cores write different cache lines, and are summed when read.
//
// A P's counters are found through the runtime's procPin, which also keeps the
// goroutine on its P while it counts; only that P's goroutines write them.
package percpu

import (
	"runtime"
	"sync/atomic"
	_ "unsafe" // go:linkname
)

// procPin returns the current P's id and keeps the goroutine on it until procUnpin.
// The runtime keeps both for packages that link them (go.dev/issue/67401).
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// cacheLine is the size the per-P parts are padded to, so that no two share a line
// (128: adjacent-line prefetching pairs 64-byte lines on x86).
const cacheLine = 128

// slotsPerP is how many series a P counts in slots of its own.
const slotsPerP = 64

// Slots counts, for a slice of counters indexed by series number, the first series
// each P counts (a popular name's among them: it is asked early and often) in slots of
// that P: the series that every query of a popular name adds to would otherwise be a
// cache line that every core writes. A series takes a
// free slot of the two its number maps to the first time it is counted on a P, and
// keeps it: its count there never moves back to the slice, so a reader summing the
// slice and the slots never sees a count twice or misses one. A series whose slots are
// taken (a P counts more than 64 series) is counted in the slice, as it would be
// without slots: those are the less busy ones, spread over many lines.
type Slots struct {
	ps []pslots
}

type pslots struct {
	key [slotsPerP]atomic.Int32 // the series number + 1; 0: free
	n   [slotsPerP]atomic.Uint64
	_   [cacheLine]byte // the next P's slots start on another line
}

// NewSlots returns the slots of the Ps there are now (GOMAXPROCS); a P added later
// counts in the slice.
func NewSlots() *Slots { return &Slots{ps: make([]pslots, runtime.GOMAXPROCS(0))} }

// Add counts one for series n (>= 0) in the current P's slot and reports whether it
// did; when not, the caller counts it in the slice.
func (s *Slots) Add(n int32) bool {
	p := procPin()
	if p >= len(s.ps) {
		procUnpin()
		return false
	}
	ps := &s.ps[p]
	for i, probe := uint32(n)%slotsPerP, 0; probe < 2; i, probe = (i+1)%slotsPerP, probe+1 {
		switch ps.key[i].Load() {
		case 0: // only this P writes its keys, and it is pinned
			ps.key[i].Store(n + 1)
			fallthrough
		case n + 1:
			ps.n[i].Add(1)
			procUnpin()
			return true
		}
	}
	procUnpin()
	return false
}

// Each calls fn with each slot's series and count (a series may have a slot on
// several Ps).
func (s *Slots) Each(fn func(n int32, v uint64)) {
	for p := range s.ps {
		ps := &s.ps[p]
		for i := range ps.key {
			if k := ps.key[i].Load(); k > 0 {
				fn(k-1, ps.n[i].Load())
			}
		}
	}
}

// Take zeroes the slots of the series that want accepts and passes what they held to
// fn (counts moving to another set of counters); counting into them goes on.
func (s *Slots) Take(want func(n int32) bool, fn func(n int32, v uint64)) {
	for p := range s.ps {
		ps := &s.ps[p]
		for i := range ps.key {
			if k := ps.key[i].Load(); k > 0 && want(k-1) {
				if v := ps.n[i].Swap(0); v > 0 {
					fn(k-1, v)
				}
			}
		}
	}
}
