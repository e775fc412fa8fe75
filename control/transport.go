package control

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/healthroute/healthroute/internal/connlimit"
	"github.com/healthroute/healthroute/internal/ratelog"
)

// The control port carries two kinds of connections, told apart by their first
// byte after the handshake: raft's own RPCs, and changes and consistent reads
// forwarded to the leader.
const (
	kindRaft    byte = 'R'
	kindForward byte = 'F'
)

// handshakeTimeout bounds the handshake of an inbound connection: one that does
// not prove the key in time is closed.
const handshakeTimeout = 2 * time.Second

// The control port's connection limits (internal/connlimit): a connection over
// them makes room by closing one that has not proved the key yet, the same
// client's or the oldest of the client holding the most; connections that proved
// it are never closed to make room. A voter holds a few (raft's pool of 3 a peer,
// its pipeline, a forwarded change's while it lasts), so a flood of connections
// that never prove the key costs at most maxConns descriptors, churning through its
// own slots, and cannot lock the voters out.
const (
	maxConns          = 256
	maxConnsPerClient = 64
)

// logLimited logs the control port's refusals, a line per kind per 10 s.
func logLimited(kind, format string, args ...any) {
	if msg, ok := refusals.Line(kind, time.Now(), format, args...); ok {
		log.Warning(msg)
	}
}

var refusals = ratelog.Limiter{Window: 10 * time.Second, Burst: 1}

const nonceLen = 16

// mux is raft's StreamLayer on the control port. Every inbound connection must
// prove the fleet key first: the listener sends a fresh nonce and the dialer
// answers with its kind and HMAC-SHA256(key, kind || nonce). Connections that do
// not are closed unread. Forwarded requests go to serve; raft's go to Accept.
type mux struct {
	ln      net.Listener
	key     []byte
	serve   func(net.Conn) // a forwarded request's connection; serve closes it
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	refused func() // counts a connection refused at the handshake
}

func newMux(ln net.Listener, key []byte, serve func(net.Conn), refused func()) *mux {
	m := &mux{ln: ln, key: key, serve: serve, conns: make(chan net.Conn), done: make(chan struct{}), refused: refused}
	go m.loop()
	return m
}

func (m *mux) loop() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.Close()
			return
		}
		go m.admit(c)
	}
}

// admit runs the handshake of one inbound connection and hands it on.
func (m *mux) admit(c net.Conn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	nonce := make([]byte, nonceLen)
	rand.Read(nonce)
	buf := make([]byte, 1+sha256.Size)
	if _, err := c.Write(nonce); err != nil {
		c.Close()
		return
	}
	if _, err := io.ReadFull(c, buf); err != nil || !hmac.Equal(buf[1:], m.mac(buf[0], nonce)) {
		c.Close()
		if m.refused != nil {
			m.refused()
		}
		return
	}
	c.SetDeadline(time.Time{})
	connlimit.Hold(c) // proved the key: the listener keeps it whatever comes
	switch buf[0] {
	case kindForward:
		m.serve(c)
	case kindRaft:
		select {
		case m.conns <- c:
		case <-m.done:
			c.Close()
		}
	default:
		c.Close()
	}
}

func (m *mux) mac(kind byte, nonce []byte) []byte {
	h := hmac.New(sha256.New, m.key)
	h.Write([]byte{kind})
	h.Write(nonce)
	return h.Sum(nil)
}

// dial connects to a member's control port as kind.
func (m *mux) dial(addr string, kind byte, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	nonce := make([]byte, nonceLen)
	if _, err := io.ReadFull(c, nonce); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Write(append([]byte{kind}, m.mac(kind, nonce)...)); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// Accept implements net.Listener for raft.
func (m *mux) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (m *mux) Close() error {
	m.once.Do(func() {
		close(m.done)
		m.ln.Close()
	})
	return nil
}

// Addr implements net.Listener.
func (m *mux) Addr() net.Addr { return m.ln.Addr() }

// Dial implements raft.StreamLayer.
func (m *mux) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return m.dial(string(addr), kindRaft, timeout)
}
