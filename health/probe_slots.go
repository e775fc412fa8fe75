package health

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// limiter bounds the probes in flight: a counting semaphore whose bound can change.
// Waiters are granted slots in the order of their keys (see waitKey), ties in the
// order they asked.
type limiter struct {
	mu    sync.Mutex
	limit int
	used  int
	seq   uint64
	queue waitQueue
}

// waiter is one probe waiting for a slot; ch is closed when it is granted one.
type waiter struct {
	ch  chan struct{}
	due time.Time
	key time.Time
	seq uint64
	i   int // index in the queue, -1 once out of it
}

// acquire takes a slot for a probe due at due, waiting in line for one by key; it
// fails when ctx ends first.
func (l *limiter) acquire(ctx context.Context, due, key time.Time) error {
	l.mu.Lock()
	if l.used < l.limit && len(l.queue) == 0 {
		l.used++
		l.mu.Unlock()
		return nil
	}
	l.seq++
	w := &waiter{ch: make(chan struct{}), due: due, key: key, seq: l.seq}
	heap.Push(&l.queue, w)
	l.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.i < 0 { // granted as ctx ended: hand the slot on
		l.used--
		l.grantLocked()
	} else {
		heap.Remove(&l.queue, w.i)
	}
	return ctx.Err()
}

func (l *limiter) release() {
	l.mu.Lock()
	l.used--
	l.grantLocked()
	l.mu.Unlock()
}

// resize sets the bound to n, granting waiters the slots a raise frees.
func (l *limiter) resize(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = n
	l.grantLocked()
}

func (l *limiter) grantLocked() {
	for l.used < l.limit && len(l.queue) > 0 {
		close(heap.Pop(&l.queue).(*waiter).ch)
		l.used++
	}
}

func (l *limiter) cap() int     { l.mu.Lock(); defer l.mu.Unlock(); return l.limit }
func (l *limiter) inUse() int   { l.mu.Lock(); defer l.mu.Unlock(); return l.used }
func (l *limiter) waiting() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) }

// oldest returns the earliest due time among the waiters, zero when none waits.
func (l *limiter) oldest() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t time.Time
	for _, w := range l.queue {
		if t.IsZero() || w.due.Before(t) {
			t = w.due
		}
	}
	return t
}

// waitQueue is a heap of waiters by key, then by arrival.
type waitQueue []*waiter

func (q waitQueue) Len() int { return len(q) }
func (q waitQueue) Less(i, j int) bool {
	if !q[i].key.Equal(q[j].key) {
		return q[i].key.Before(q[j].key)
	}
	return q[i].seq < q[j].seq
}
func (q waitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].i, q[j].i = i, j
}
func (q *waitQueue) Push(x any) {
	w := x.(*waiter)
	w.i = len(*q)
	*q = append(*q, w)
}
func (q *waitQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	w.i = -1
	return w
}
