// Package connlimit bounds the connections an HTTP listener holds: in all and per
// client, making room under a flood by closing connections that send nothing, so a
// flood of idle connections cannot lock out the clients that ask. The operator API
// and the Route 53-compatible API listen through it.
package connlimit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Listener holds at most max connections at once, and at most perClient from
// one client. A connection over a limit makes room by closing an older one that is
// not being answered (still sending its request's headers, or idle between
// requests): the same client's oldest for the per-client limit, the oldest of the
// client holding the most for the total. So a flood of connections that send
// nothing churns through its own slots and cannot lock others out. With no such
// connection to close, the new one is closed as soon as it is accepted. Either way
// the connection closed gets a reset, holding no descriptor and no TIME_WAIT.
// golang.org/x/net/netutil.LimitListener only caps the total, by blocking Accept:
// excess connections wait in the kernel's queue, and a flood holds every slot.
type Listener struct {
	net.Listener
	max, perClient int
	name           string // the listener's name in log lines, such as "api"
	logf           Logf

	mu     sync.Mutex
	open   int
	seq    uint64                   // connections accepted
	client map[netip.Prefix][]*conn // oldest first
}

// New limits ln to max connections at once and perClient from one client (at most
// max); name starts its log lines, which go to logf.
func New(ln net.Listener, name string, max, perClient int, logf Logf) *Listener {
	return &Listener{Listener: ln, name: name, max: max, perClient: min(perClient, max), logf: logf, client: map[netip.Prefix][]*conn{}}
}

// Logf logs a line of kind ("refused" here), rate-limited by kind as the caller sees fit.
type Logf func(kind, format string, args ...any)

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

// Accept returns the next connection, within the limits; see Listener.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &conn{Conn: c, l: l, who: clientOf(c.RemoteAddr())}
		l.mu.Lock()
		var victim *conn
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
			l.logf("refused", "%s %s: refused a connection from %s: at the limit of %s, each being answered", l.name, l.Addr(), c.RemoteAddr(), limit)
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
			l.logf("refused", "%s %s: closed a connection from %s that had no request being answered: at the limit of %s", l.name, l.Addr(), victim.RemoteAddr(), limit)
		}
		return lc, nil
	}
}

// idleOf returns the oldest of conns not being answered, nil if each is.
func idleOf(conns []*conn) *conn {
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
func (l *Listener) idleOfBusiestLocked() *conn {
	var best *conn
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
func (l *Listener) dropLocked(c *conn) {
	if c.gone {
		return
	}
	c.gone = true
	l.open--
	conns := slices.DeleteFunc(l.client[c.who], func(x *conn) bool { return x == c })
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

// conn is a connection within the limits; it gives its slot back when closed.
type conn struct {
	net.Conn
	l    *Listener
	who  netip.Prefix
	seq  uint64       // accept order
	busy atomic.Int32 // a request on it is being answered
	gone bool         // its slot was given back; guarded by l.mu
}

func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connKey is the context key under which the server keeps a request's connection.
type connKey struct{}

// ConnContext is the http.Server's ConnContext for a Listener: it keeps each
// connection in its requests' context, for Answering.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// Answering marks the connection of each request as being answered while next
// handles it, so the listener does not close it to make room. The server's
// ConnContext must be ConnContext.
func Answering(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer Busy(r.Context())()
		next.ServeHTTP(w, r)
	})
}

// Busy marks the connection of a request's context as being answered until
// release is called. A handler that reads and authenticates a request first
// calls it after, instead of going through Answering: until then a client that
// sends its body slowly, or cannot sign, holds a slot the listener may close to
// make room. The server's ConnContext must be ConnContext.
func Busy(ctx context.Context) (release func()) {
	c, ok := ctx.Value(connKey{}).(*conn)
	if !ok {
		return func() {}
	}
	c.busy.Add(1)
	return func() { c.busy.Add(-1) }
}

// Hold marks c, a connection a Listener accepted, as in use until it is closed, for
// a protocol other than HTTP (where Answering marks each request): the listener
// never closes it to make room. A connection from elsewhere is left alone.
func Hold(c net.Conn) {
	if lc, ok := c.(*conn); ok {
		lc.busy.Add(1)
	}
}
