package operator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
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

// limitListener holds at most max connections at once, and at most perClient from
// one client. A connection over a limit makes room by closing an older one that is
// not being answered (still sending its request's headers, or idle between
// requests): the same client's oldest for the per-client limit, the oldest of the
// client holding the most for the total. So a flood of connections that send
// nothing churns through its own slots and cannot lock others out. With no such
// connection to close, the new one is closed as soon as it is accepted. Either way
// the connection closed gets a reset, holding no descriptor and no TIME_WAIT.
// golang.org/x/net/netutil.LimitListener only caps the total, by blocking Accept:
// excess connections wait in the kernel's queue, and a flood holds every slot.
type limitListener struct {
	net.Listener
	max, perClient int
	logs           *errorLog

	mu     sync.Mutex
	open   int
	seq    uint64                        // connections accepted
	client map[netip.Prefix][]*limitConn // oldest first
}

func newLimitListener(ln net.Listener, max, perClient int, logs *errorLog) *limitListener {
	return &limitListener{Listener: ln, max: max, perClient: perClient, logs: logs, client: map[netip.Prefix][]*limitConn{}}
}

// clientOf is the unit a per-client limit counts: the address, or its /64 for IPv6
// (one host commonly holds a whole /64).
func clientOf(a net.Addr) netip.Prefix {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// Accept returns the next connection, within the limits; see limitListener.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitConn{Conn: c, l: l, who: clientOf(c.RemoteAddr())}
		l.mu.Lock()
		var victim *limitConn
		limit := ""
		switch {
		case len(l.client[lc.who]) >= l.perClient:
			limit = fmt.Sprintf("%d connections from %s", l.perClient, lc.who)
			victim = idleOf(l.client[lc.who])
		case l.open >= l.max:
			limit = fmt.Sprintf("%d connections in all", l.max)
			victim = l.idleOfBusiestLocked()
		}
		if limit != "" && victim == nil {
			l.mu.Unlock()
			reset(c)
			l.logs.Errorf("refused", "api %s: refused a connection from %s: at the limit of %s, each being answered", l.Addr(), c.RemoteAddr(), limit)
			continue
		}
		if victim != nil {
			l.dropLocked(victim)
		}
		l.seq++
		lc.seq = l.seq
		l.open++
		l.client[lc.who] = append(l.client[lc.who], lc)
		l.mu.Unlock()
		if victim != nil {
			reset(victim.Conn)
			l.logs.Errorf("refused", "api %s: closed a connection from %s that had no request being answered: at the limit of %s", l.Addr(), victim.RemoteAddr(), limit)
		}
		return lc, nil
	}
}

// idleOf returns the oldest of conns not being answered, nil if each is.
func idleOf(conns []*limitConn) *limitConn {
	for _, c := range conns {
		if c.busy.Load() == 0 {
			return c
		}
	}
	return nil
}

// idleOfBusiestLocked returns, of the clients with a connection not being answered,
// the one holding the most connections (of equals, the one with the oldest such
// connection), and that oldest connection. l.mu must be held.
func (l *limitListener) idleOfBusiestLocked() *limitConn {
	var best *limitConn
	held := 0
	for _, conns := range l.client {
		c := idleOf(conns)
		if c != nil && (len(conns) > held || len(conns) == held && c.seq < best.seq) {
			best, held = c, len(conns)
		}
	}
	return best
}

// dropLocked gives c's slot back, once. l.mu must be held.
func (l *limitListener) dropLocked(c *limitConn) {
	if c.gone {
		return
	}
	c.gone = true
	l.open--
	conns := slices.DeleteFunc(l.client[c.who], func(x *limitConn) bool { return x == c })
	if len(conns) == 0 {
		delete(l.client, c.who)
	} else {
		l.client[c.who] = conns
	}
}

// reset closes c with a TCP reset.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// limitConn is a connection within the limits; it gives its slot back when closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	who  netip.Prefix
	seq  uint64       // accept order
	busy atomic.Int32 // a request on it is being answered
	gone bool         // its slot was given back; guarded by l.mu
}

func (c *limitConn) Close() error {
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connKey is the context key under which the API's server keeps its connection.
type connKey struct{}

// answering marks the connection of each request as being answered while next
// handles it, so the listener does not close it to make room.
func answering(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*limitConn); ok {
			c.busy.Add(1)
			defer c.busy.Add(-1)
		}
		next.ServeHTTP(w, r)
	})
}

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
	ok, held := r.limit.Allow(kind, r.now())
	if !ok {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if held.Count > 0 {
		msg += fmt.Sprintf(" (and %d more like it since the last such line)", held.Count)
	}
	r.out(msg)
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
