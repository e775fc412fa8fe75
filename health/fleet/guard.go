package fleet

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Limits caps the gossip port's inbound TCP connections. Anyone who can reach the
// port can connect (the key is checked only on the first message), and memberlist
// would hold each connection for its TCP timeout (30 s on a WAN), so without caps
// idle connections could take the file descriptors that probes and DNS need.
// memberlist handles one message per inbound connection, which a member sends as
// soon as it connects, so real members never come near these limits.
type Limits struct {
	Streams        int           // inbound connections open at once; 0: DefaultStreams
	StreamsPerPeer int           // of them from one address; 0: DefaultStreamsPerPeer
	FirstByte      time.Duration // a connection that sends nothing for this long is closed; 0: DefaultFirstByte
	StreamLife     time.Duration // and every connection after this long; 0: DefaultStreamLife
}

// Default limits: 128 descriptors at most, an eighth of `ulimit -n 1024`.
const (
	DefaultStreams        = 128
	defaultStreamsPerPeer = 16
	defaultFirstByte      = 2 * time.Second
	defaultStreamLife     = 10 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.Streams <= 0 {
		l.Streams = DefaultStreams
	}
	if l.StreamsPerPeer <= 0 {
		l.StreamsPerPeer = defaultStreamsPerPeer
	}
	l.StreamsPerPeer = min(l.StreamsPerPeer, l.Streams)
	if l.FirstByte <= 0 {
		l.FirstByte = defaultFirstByte
	}
	if l.StreamLife <= 0 {
		l.StreamLife = defaultStreamLife
	}
	l.StreamLife = max(l.StreamLife, l.FirstByte)
	return l
}

// guard is a memberlist transport that admits inbound connections within Limits
// and bounds how long each may stay open.
type guard struct {
	memberlist.NodeAwareTransport
	lim     Limits
	logs    *rateLog
	ch      chan net.Conn
	done    chan struct{} // closed at Shutdown: stop handing connections over
	stopped chan struct{} // closed once the inner transport is shut down
	exited  chan struct{}

	mu   sync.Mutex
	open int
	per  map[netip.Addr]int
}

func newGuard(tr memberlist.NodeAwareTransport, lim Limits, logs *rateLog) *guard {
	g := &guard{NodeAwareTransport: tr, lim: lim.withDefaults(), logs: logs, ch: make(chan net.Conn),
		done: make(chan struct{}), stopped: make(chan struct{}), exited: make(chan struct{}), per: map[netip.Addr]int{}}
	go g.pump()
	return g
}

func (g *guard) StreamCh() <-chan net.Conn { return g.ch }

// Shutdown shuts the inner transport down. Meanwhile the pump keeps taking its
// connections (and closes them), so the inner transport's listener never blocks
// handing one over.
func (g *guard) Shutdown() error {
	close(g.done)
	err := g.NodeAwareTransport.Shutdown()
	close(g.stopped)
	<-g.exited
	return err
}

func (g *guard) pump() {
	defer close(g.exited)
	in := g.NodeAwareTransport.StreamCh()
	for {
		select {
		case <-g.stopped:
			return
		case c := <-in:
			gc := g.admit(c)
			if gc == nil {
				continue
			}
			select {
			case g.ch <- gc:
			case <-g.done:
				gc.Close()
			}
		}
	}
}

// admit wraps c, or closes it when a limit is reached (or the guard is shutting down).
func (g *guard) admit(c net.Conn) net.Conn {
	select {
	case <-g.done:
		c.Close()
		return nil
	default:
	}
	var ip netip.Addr
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ip = a.AddrPort().Addr().Unmap()
	}
	g.mu.Lock()
	reason := ""
	switch {
	case g.open >= g.lim.Streams:
		reason = "total"
	case g.per[ip] >= g.lim.StreamsPerPeer:
		reason = "peer"
	default:
		g.open++
		g.per[ip]++
	}
	g.mu.Unlock()
	if reason != "" {
		c.Close()
		connectionsRefused.WithLabelValues(reason).Inc()
		if reason == "total" {
			g.logs.note(levelWarning, "fleet: gossip connection from "+ip.String()+" refused: the limit of inbound connections is reached")
		} else {
			g.logs.note(levelWarning, "fleet: gossip connection from "+ip.String()+" refused: the limit of inbound connections from one address is reached")
		}
		return nil
	}
	gc := &guardedConn{Conn: c, g: g, ip: ip, accepted: time.Now()}
	gc.mu.Lock()
	gc.applyLocked()
	gc.mu.Unlock()
	return gc
}

func (g *guard) release(ip netip.Addr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open--
	if g.per[ip]--; g.per[ip] <= 0 {
		delete(g.per, ip)
	}
}

// guardedConn is an admitted inbound connection: memberlist's deadlines are
// clamped to FirstByte after the accept until the first byte arrives, and to
// StreamLife after it.
type guardedConn struct {
	net.Conn
	g        *guard
	ip       netip.Addr
	accepted time.Time

	mu      sync.Mutex
	want    time.Time // the deadline memberlist asked for; zero: none
	started bool      // a byte arrived
	closed  bool
}

func (c *guardedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		if !c.started {
			c.started = true
			c.applyLocked()
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *guardedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want = t
	return c.applyLocked()
}

// SetReadDeadline and SetWriteDeadline set both deadlines, clamped: memberlist only
// ever sets both at once, and an inbound connection is one exchange.
func (c *guardedConn) SetReadDeadline(t time.Time) error  { return c.SetDeadline(t) }
func (c *guardedConn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }

func (c *guardedConn) applyLocked() error {
	limit := c.accepted.Add(c.g.lim.FirstByte)
	if c.started {
		limit = c.accepted.Add(c.g.lim.StreamLife)
	}
	d := c.want
	if d.IsZero() || d.After(limit) {
		d = limit
	}
	return c.Conn.SetDeadline(d)
}

func (c *guardedConn) Close() error {
	c.mu.Lock()
	first := !c.closed
	c.closed = true
	c.mu.Unlock()
	if first {
		c.g.release(c.ip)
	}
	return c.Conn.Close()
}
