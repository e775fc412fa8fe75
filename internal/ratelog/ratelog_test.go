package ratelog

import (
	"testing"
	"time"
)

// Burst lines of a kind per window; the rest are held and counted, and the first
// line of the next window carries the count and when it began. Kinds are apart.
func TestAllowBurstPerWindow(t *testing.T) {
	l := Limiter{Window: 10 * time.Second, Burst: 3}
	t0 := time.Unix(1e9, 0)
	let := 0
	for i := range 100 {
		if ok, held := l.Allow("a", t0.Add(time.Duration(i)*time.Millisecond)); ok {
			let++
			if held.Count != 0 {
				t.Errorf("line %d let through within the first window carries %d held", i, held.Count)
			}
		}
	}
	if let != 3 {
		t.Fatalf("%d lines let through in the first window; want 3", let)
	}
	if ok, _ := l.Allow("b", t0); !ok {
		t.Error("another kind's first line was held")
	}
	ok, held := l.Allow("a", t0.Add(10*time.Second))
	if !ok || held.Count != 97 || !held.Since.Equal(t0.Add(2*time.Millisecond)) {
		t.Errorf("first line of the next window: %v, %+v; want let through, carrying 97 held since the 3rd line", ok, held)
	}
}

// Flush reports the held lines only once the window is over, once.
func TestFlushAfterWindow(t *testing.T) {
	l := Limiter{Window: time.Minute, Burst: 1}
	t0 := time.Unix(1e9, 0)
	for range 5 {
		l.Allow("a", t0)
	}
	if h := l.Flush("a", t0.Add(time.Second)); h.Count != 0 {
		t.Errorf("flush within the window reported %+v", h)
	}
	if h := l.Flush("a", t0.Add(time.Minute)); h.Count != 4 || !h.Since.Equal(t0) {
		t.Errorf("flush after the window: %+v; want 4 since t0", h)
	}
	if h := l.Flush("a", t0.Add(2*time.Minute)); h.Count != 0 {
		t.Errorf("second flush reported %+v again", h)
	}
	if ok, held := l.Allow("a", t0.Add(2*time.Minute)); !ok || held.Count != 0 {
		t.Errorf("after the flush: %v, %+v; want let through with nothing held", ok, held)
	}
}
