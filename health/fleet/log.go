package fleet

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Log levels of rateLog.
const (
	levelDebug = iota
	levelWarning
	levelError
)

// A window of logWindow logs at most logBurst warnings and errors.
const (
	logBurst  = 5
	logWindow = 10 * time.Second
)

// rateLog is memberlist's logger. Its errors and warnings are mostly about what
// others send to the gossip port (datagrams that do not decrypt or decode,
// connections that send nothing), which anyone who can reach the port can cause at
// line rate: each is counted in coredns_healthroute_fleet_gossip_errors_total, and
// at most logBurst of them (and of the fleet's own notes) are logged per
// logWindow; the next line logged says how many were not.
type rateLog struct {
	now func() time.Time
	out func(level int, msg string) // nil: the plugin log

	mu         sync.Mutex
	start      time.Time // of the current window
	n          int       // lines logged in it
	suppressed int       // lines not logged in it
}

func newRateLog() *rateLog { return &rateLog{now: time.Now} }

// Write takes one line of memberlist's log.
func (l *rateLog) Write(p []byte) (int, error) {
	s := strings.TrimSpace(string(p))
	switch {
	case strings.HasPrefix(s, "[ERR]"), strings.HasPrefix(s, "[ERROR]"):
		gossipErrors.Inc()
		l.note(levelError, s)
	case strings.HasPrefix(s, "[WARN]"):
		gossipErrors.Inc()
		l.note(levelWarning, s)
	default:
		l.emit(levelDebug, s)
	}
	return len(p), nil
}

// note logs msg unless this window's budget is spent.
func (l *rateLog) note(level int, msg string) {
	l.mu.Lock()
	summary := l.rollLocked()
	ok := l.n < logBurst
	if ok {
		l.n++
	} else {
		l.suppressed++
	}
	l.mu.Unlock()
	if summary != "" {
		l.emit(levelWarning, summary)
	}
	if ok {
		l.emit(level, msg)
	}
}

// flush logs how many lines the last window suppressed once it is over, so the
// count is not held back until the next line.
func (l *rateLog) flush() {
	l.mu.Lock()
	summary := l.rollLocked()
	l.mu.Unlock()
	if summary != "" {
		l.emit(levelWarning, summary)
	}
}

// rollLocked starts a new window when the current one is over and returns the
// line to log about the one that ended, if it suppressed any.
func (l *rateLog) rollLocked() string {
	now := l.now()
	if now.Sub(l.start) < logWindow {
		return ""
	}
	s := ""
	if l.suppressed > 0 {
		s = fmt.Sprintf("fleet: %d more gossip errors and warnings in %s not logged (coredns_healthroute_fleet_gossip_errors_total counts them)",
			l.suppressed, now.Sub(l.start).Round(time.Second))
	}
	l.start, l.n, l.suppressed = now, 0, 0
	return s
}

func (l *rateLog) emit(level int, msg string) {
	if l.out != nil {
		l.out(level, msg)
		return
	}
	switch level {
	case levelError:
		log.Error(msg)
	case levelWarning:
		log.Warning(msg)
	default:
		log.Debug(msg)
	}
}
