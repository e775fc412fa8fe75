// Package ratelog is healthroute's one rate limiter of log lines: the lines of
// each kind are let through at most Burst per Window, and the ones held back are
// counted, so that the next line let through (or a flush once the window is over)
// can say how many were not logged. The API (bad requests, refused connections),
// the fleet (memberlist's errors about what others send) and the scheduler (late
// probes, local resource errors) log through it: what anyone can cause at line
// rate costs a few lines.
package ratelog

import (
	"fmt"
	"sync"
	"time"
)

// Limiter decides which lines to log. The caller gives the time, so a limiter
// needs no clock of its own. Set Window and Burst before the first use; with a
// zero Window every line is let through.
type Limiter struct {
	Window time.Duration // lines of a kind are counted per window
	Burst  int           // lines of a kind let through per window (less than 1 counts as 1)

	mu    sync.Mutex
	kinds map[string]*count // a fixed, small set of kinds
}

type count struct {
	start time.Time // of the current window
	n     int       // lines let through in it
	held  int       // lines held back since the last report
	since time.Time // when the held lines began to be counted
}

// Held is what a limiter held back of one kind: Count lines from Since on.
type Held struct {
	Count int
	Since time.Time
}

// Allow counts one line of kind at now and reports whether to log it. When it
// does, held is what was held back of kind before it (to report with it).
func (l *Limiter) Allow(kind string, now time.Time) (ok bool, held Held) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.countLocked(kind, now)
	if c.n < max(l.Burst, 1) {
		c.n++
		held = Held{c.held, c.since}
		c.held, c.since = 0, now
		return true, held
	}
	c.held++
	return false, Held{}
}

// Line counts one line of kind at now and, when Allow lets it through, returns
// it formatted, followed by how many lines of its kind were held back before it.
func (l *Limiter) Line(kind string, now time.Time, format string, args ...any) (string, bool) {
	ok, held := l.Allow(kind, now)
	if !ok {
		return "", false
	}
	msg := fmt.Sprintf(format, args...)
	if held.Count > 0 {
		msg += fmt.Sprintf(" (and %d more like it since the last such line)", held.Count)
	}
	return msg, true
}

// Flush reports what was held back of kind once its window is over at now, and
// forgets it, for a line of its own when no new line comes to carry the count.
// Within the window, or with nothing held, it reports a zero Count.
func (l *Limiter) Flush(kind string, now time.Time) Held {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.countLocked(kind, now)
	held := Held{c.held, c.since}
	if c.n > 0 || c.held == 0 { // the window is not over, or nothing to say
		return Held{}
	}
	c.held, c.since = 0, now
	return held
}

// countLocked returns kind's count, starting a new window when its last one is
// over at now.
func (l *Limiter) countLocked(kind string, now time.Time) *count {
	if l.kinds == nil {
		l.kinds = map[string]*count{}
	}
	c := l.kinds[kind]
	if c == nil {
		c = &count{start: now, since: now}
		l.kinds[kind] = c
	}
	if now.Sub(c.start) >= l.Window {
		c.start, c.n = now, 0
	}
	return c
}
