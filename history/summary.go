package history

import (
	"container/heap"
	"strings"
	"time"

	"github.com/healthroute/healthroute/view"
)

// Timeline summarises the span before now of the check with fingerprint fp in n
// equal slots, from its minutes and changes; it reads the samples in place.
func (s *Store) Timeline(fp string, now time.Time, span time.Duration, n int) (view.Timeline, bool) {
	tl := view.Timeline{Slots: make([]int8, n), Latency: make([]float64, n)}
	for i := range n {
		tl.Slots[i], tl.Latency[i] = -1, -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checks[fp]
	if c == nil || n <= 0 {
		return tl, false
	}
	from := now.Add(-span)
	slot := func(t time.Time) int {
		if t.Before(from) || !t.Before(now.Add(time.Minute)) {
			return -1
		}
		return min(int(int64(t.Sub(from))*int64(n)/int64(span)), n-1)
	}
	sums := make([]float64, n)
	probes := make([]int, n)
	for _, sm := range c.samples {
		i := slot(time.Unix(int64(sm.minute)*60, 0))
		if i < 0 {
			continue
		}
		if tl.Slots[i] < 0 {
			tl.Slots[i] = 0
		}
		if sm.down == 1 {
			tl.Slots[i] = 1
		}
		sums[i] += float64(sm.sum) / 10
		probes[i] += int(sm.probes)
	}
	for i := range n {
		if probes[i] > 0 {
			tl.Latency[i] = sums[i] / float64(probes[i])
		}
	}
	for _, ch := range c.changes {
		if i := slot(time.Unix(0, ch.at)); i >= 0 {
			tl.Changes++
			if ch.down {
				tl.Slots[i] = 1
			}
		}
	}
	return tl, true
}

// Latest returns the n latest changes, newest first, of the checks that name
// gives a name for (by fingerprint), without copying the others.
func (s *Store) Latest(n int, name func(fp string) (string, bool)) []view.CheckChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &latestHeap{}
	for fp, c := range s.checks {
		nm, ok := name(fp)
		if !ok {
			continue
		}
		prev := false
		for i := range c.changes {
			ch := &c.changes[(c.cnext+i)%len(c.changes)]
			if i == 0 {
				prev = !ch.down
			}
			from := prev
			prev = ch.down
			if h.Len() == n && ch.at <= (*h)[0].at {
				continue
			}
			heap.Push(h, latest{at: ch.at, check: nm, from: from, ch: ch})
			if h.Len() > n {
				heap.Pop(h)
			}
		}
	}
	out := make([]view.CheckChange, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		l := heap.Pop(h).(latest)
		v := view.CheckChange{Check: l.check, Change: view.Change{Time: time.Unix(0, l.at).UTC(), From: word(l.from), To: word(l.ch.down), Reason: l.ch.reason}}
		if l.ch.members != "" {
			v.Members = strings.Split(l.ch.members, ",")
		}
		out[i] = v
	}
	return out
}

type latest struct {
	at    int64
	check string
	from  bool
	ch    *change
}

// latestHeap is a min-heap by time: its root is the oldest of the latest kept.
type latestHeap []latest

func (h latestHeap) Len() int           { return len(h) }
func (h latestHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h latestHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *latestHeap) Push(x any)        { *h = append(*h, x.(latest)) }
func (h *latestHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
