package operator

import (
	"context"
	"net/http"
	"time"

	"github.com/healthroute/healthroute/internal/ratelog"
	"golang.org/x/time/rate"
)

// The API listener's limits. They keep a flood of connections from costing the
// process more than a small, fixed share of its file descriptors (safe with
// `ulimit -n 1024`), so probes and DNS keep theirs.
const (
	// maxConns is the most connections the API holds open at once.
	maxConns = 128
	// maxConnsPerClient is the most one client holds: an IPv4 address, or an IPv6 /64.
	maxConnsPerClient = 16

	readHeaderTimeout = 5 * time.Second  // a request's headers, from the first byte
	readTimeout       = 10 * time.Second // the whole request, body included
	writeTimeout      = 10 * time.Second // writing the response
	idleTimeout       = 30 * time.Second // between requests on a kept-alive connection
	// maxHeaderBytes bounds a request's head: its request line and header lines as
	// sent, up to and including the blank line that ends them. More gets 431.
	maxHeaderBytes = 8 << 10
	// headerSlack is how far net/http's server reads past its MaxHeaderBytes before
	// it answers 431 (4096 bytes, for its buffering): the server is given
	// maxHeaderBytes-headerSlack, so that the bound applied is maxHeaderBytes.
	headerSlack  = 4096
	maxBodyBytes = 4 << 10 // the only body read is an override's state

	// maxExpensive is how many uncached renderings and explanations run at once;
	// expensiveWait is how long a request waits for its turn before a 503.
	maxExpensive  = 2
	expensiveWait = 2 * time.Second

	// The API's share of the CPU is paced: each request costs a unit, and a response
	// a unit more per paceUnit bytes; units are spent at paceRate a second with a
	// burst of paceBurst. A request over the pace waits for its turn, up to paceWait,
	// then gets a 503: so clients asking back to back slow down instead of taking
	// the CPU from DNS.
	paceRate  = 50
	paceBurst = 100
	paceUnit  = 64 << 10
	paceWait  = 5 * time.Second

	// logEvery is the least time between two log lines of one kind of API error;
	// the lines in between are counted and the count is logged with the next one.
	logEvery = 10 * time.Second
)

// pacer spends the API's units (see paceRate), shared by all its clients.
type pacer struct{ lim *rate.Limiter }

func newPacer() pacer { return pacer{rate.NewLimiter(paceRate, paceBurst)} }

// wait takes n units, waiting for them up to paceWait; false: no turn (or the
// client left).
func (p pacer) wait(ctx context.Context, n int) bool {
	ctx, cancel := context.WithTimeout(ctx, paceWait)
	defer cancel()
	return p.lim.WaitN(ctx, min(n, paceBurst)) == nil
}

// bodyUnits is what writing a body of size bytes costs beyond its request's unit.
func bodyUnits(size int) int { return size / paceUnit }

// paced lets each request in at the pace; one that finds no turn gets a 503.
func (p pacer) paced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.wait(r.Context(), 1) {
			busy(w, errBusy)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// errorLog logs errors of each kind at most once per period (internal/ratelog),
// so a flood of bad requests or connections cannot flood the log: the lines it
// holds back are counted and the count goes out with the next line of that kind.
type errorLog struct {
	now   func() time.Time // time.Now; tests set it
	out   func(msg string) // the plugin's error log; tests set it
	limit ratelog.Limiter
}

func newErrorLog(period time.Duration) *errorLog {
	return &errorLog{now: time.Now, out: func(msg string) { log.Error(msg) }, limit: ratelog.Limiter{Window: period, Burst: 1}}
}

// Errorf logs the message unless a message of kind went out less than a period ago.
func (r *errorLog) Errorf(kind, format string, args ...any) {
	if msg, ok := r.limit.Line(kind, r.now(), format, args...); ok {
		r.out(msg)
	}
}

// Write makes r the http.Server's error log: each line is an error of kind "http".
func (r *errorLog) Write(p []byte) (int, error) {
	r.Errorf("http", "api: %s", trimNewline(p))
	return len(p), nil
}

func trimNewline(p []byte) string {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return string(p)
}
