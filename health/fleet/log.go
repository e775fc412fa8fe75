package fleet

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/healthroute/healthroute/internal/ratelog"
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
// logWindow (internal/ratelog); the next line logged says how many were not.
type rateLog struct {
	now func() time.Time
	out func(level int, msg string) // nil: the plugin log

	once  sync.Once
	limit ratelog.Limiter
}

func newRateLog() *rateLog { return &rateLog{now: time.Now} }

// limiter returns the limiter, set to the fleet's policy on first use.
func (l *rateLog) limiter() *ratelog.Limiter {
	l.once.Do(func() { l.limit.Window, l.limit.Burst = logWindow, logBurst })
	return &l.limit
}

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
	now := l.now()
	ok, held := l.limiter().Allow("", now)
	if !ok {
		return
	}
	l.summarize(held, now)
	l.emit(level, msg)
}

// flush logs how many lines the last window suppressed once it is over, so the
// count is not held back until the next line.
func (l *rateLog) flush() {
	now := l.now()
	l.summarize(l.limiter().Flush("", now), now)
}

// summarize logs how many lines were held back, if any.
func (l *rateLog) summarize(held ratelog.Held, now time.Time) {
	if held.Count == 0 {
		return
	}
	l.emit(levelWarning, fmt.Sprintf("fleet: %d more gossip errors and warnings in %s not logged (coredns_healthroute_fleet_gossip_errors_total counts them)",
		held.Count, now.Sub(held.Since).Round(time.Second)))
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
