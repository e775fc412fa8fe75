package client

import (
	"testing"
	"time"
)

func TestBackoffWindow(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Cap: time.Second}
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{
		{-1, 100 * time.Millisecond},
		{0, 100 * time.Millisecond},
		{1, 200 * time.Millisecond},
		{2, 400 * time.Millisecond},
		{3, 800 * time.Millisecond},
		{4, time.Second}, // capped
		{62, time.Second},
		{1000, time.Second}, // no overflow
	} {
		if got := b.Window(tc.n); got != tc.want {
			t.Errorf("Window(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
	if got := (Backoff{}).Window(0); got != DefaultBase {
		t.Errorf("zero Backoff: Window(0) = %s, want %s", got, DefaultBase)
	}
	if got := (Backoff{Base: time.Hour, Cap: time.Minute}).Window(3); got != time.Hour {
		t.Errorf("Cap below Base: Window = %s, want Base", got)
	}
}

// TestBackoffFullJitter checks that the delay is drawn from the whole window, [0, w):
// the smallest and largest draws give 0 and w-1.
func TestBackoffFullJitter(t *testing.T) {
	for _, tc := range []struct {
		name string
		rand func(int64) int64
		want func(w time.Duration) time.Duration
	}{
		{"lowest", func(int64) int64 { return 0 }, func(time.Duration) time.Duration { return 0 }},
		{"highest", func(n int64) int64 { return n - 1 }, func(w time.Duration) time.Duration { return w - 1 }},
		{"middle", func(n int64) int64 { return n / 2 }, func(w time.Duration) time.Duration { return w / 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Backoff{Base: 100 * time.Millisecond, Cap: time.Second, Rand: tc.rand}
			for n := range 6 {
				if got, want := b.Delay(n), tc.want(b.Window(n)); got != want {
					t.Errorf("Delay(%d) = %s, want %s", n, got, want)
				}
			}
		})
	}
	// The real source stays inside the window and is not constant.
	b := Backoff{Base: 100 * time.Millisecond, Cap: time.Second}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := b.Delay(3)
		if d < 0 || d >= b.Window(3) {
			t.Fatalf("Delay(3) = %s, outside [0, %s)", d, b.Window(3))
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Errorf("200 draws gave %d distinct delays, want them spread", len(seen))
	}
}
