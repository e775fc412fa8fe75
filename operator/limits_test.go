package operator

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestErrorLogOncePerKindPerPeriod: one line per kind per period; what was held back is counted in the
// next line.
func TestErrorLogOncePerKindPerPeriod(t *testing.T) {
	var out strings.Builder
	now := time.Unix(0, 0)
	r := newErrorLog(10 * time.Second)
	r.now = func() time.Time { return now }
	r.out = func(msg string) { out.WriteString(msg + "\n") }
	for range 1000 {
		r.Errorf("refused", "refused %d", 1)
	}
	r.Errorf("http", "other kind")
	now = now.Add(10 * time.Second)
	r.Errorf("refused", "refused %d", 2)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "refused 1") || !strings.Contains(lines[1], "other kind") ||
		!strings.Contains(lines[2], "refused 2 (and 999 more like it") {
		t.Errorf("log:\n%s", out.String())
	}
}

// TestNotModified: a matching If-None-Match, weak or strong or in a list, gets 304.
func TestNotModified(t *testing.T) {
	for inm, want := range map[string]bool{`W/"a1"`: true, `"a1"`: true, `"x", W/"a1"`: true, `*`: true,
		`W/"a2"`: false, ``: false} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		w := httptest.NewRecorder()
		if got := notModified(w, r, `W/"a1"`); got != want || (got && w.Code != http.StatusNotModified) || w.Header().Get("ETag") != `W/"a1"` {
			t.Errorf("If-None-Match %q: %t %d, want %t", inm, got, w.Code, want)
		}
	}
}

// TestPacer: the burst passes at once; beyond it each unit waits its share of a
// second, and a request that would wait longer than paceWait is refused at once.
func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer()
		ctx := t.Context()
		start := time.Now()
		for range paceBurst {
			if !p.wait(ctx, 1) {
				t.Fatal("refused within the burst")
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the burst waited %s", d)
		}
		if !p.wait(ctx, 1) {
			t.Fatal("refused one unit past the burst")
		}
		if d, want := time.Since(start), time.Second/paceRate; d != want {
			t.Errorf("one unit past the burst waited %s, want %s", d, want)
		}
		if !p.wait(ctx, bodyUnits(10*paceUnit)) { // a 640 KiB body
			t.Fatal("refused a body within paceWait")
		}
		if d, want := time.Since(start), 11*time.Second/paceRate; d != want {
			t.Errorf("a 10-unit body waited until %s, want %s", d, want)
		}
		// Three clients at once, each after a full burst: the first two get theirs
		// within paceWait (2 s, 4 s); the third, due after 6 s, is refused at once.
		var granted, refused atomic.Int64
		var wg sync.WaitGroup
		before := time.Now()
		for range 3 {
			wg.Go(func() {
				if p.wait(ctx, paceBurst) {
					granted.Add(1)
				} else if time.Since(before) == 0 {
					refused.Add(1)
				}
			})
		}
		wg.Wait()
		if granted.Load() != 2 || refused.Load() != 1 {
			t.Errorf("three bursts at once: %d granted, %d refused at once; want 2 and 1", granted.Load(), refused.Load())
		}
	})
}

// TestGate: maxExpensive requests run at once; the next waits expensiveWait for a
// turn, and gets one when a running one leaves.
func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := make(gate, maxExpensive)
		for range maxExpensive {
			if err := g.enter(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if err := g.enter(t.Context()); !errors.Is(err, errBusy) || time.Since(start) != expensiveWait {
			t.Errorf("a third request: %v after %s, want busy after %s", err, time.Since(start), expensiveWait)
		}
		go func() { time.Sleep(time.Second); g.leave() }()
		start = time.Now()
		if err := g.enter(t.Context()); err != nil || time.Since(start) != time.Second {
			t.Errorf("with one leaving after 1s: %v after %s", err, time.Since(start))
		}
	})
}
