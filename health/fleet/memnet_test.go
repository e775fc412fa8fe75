package fleet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// memNet is a network in memory for the simulation on a fake clock
// (testing/synctest): every member's datagrams and streams travel through channels,
// so a member waiting for one is durably blocked and the bubble's clock moves on
// only when every member has done all it can. The fleet's behaviour in time is
// then what it would be with a core for each member, however many members one
// process runs on however few cores; the CPU it took is measured apart. It
// delivers datagrams at once and drops them when a member's queue is full, as a
// full socket buffer does, and counts every byte members send.
type memNet struct {
	mu    sync.Mutex
	nodes map[string]*memNode // by address
	port  int                 // the last port handed out
	bytes atomic.Int64
	lost  atomic.Int64 // datagrams dropped on a full queue
	// side is each address's side of a partition (absent: side 0): datagrams
	// between sides are lost and connections time out. Set through split.
	side map[string]int
}

// split puts each address on its side (absent: side 0); nil heals every partition.
func (n *memNet) split(side map[string]int) {
	n.mu.Lock()
	n.side = side
	n.mu.Unlock()
}

// cut reports whether a partition lies between addresses a and b.
func (n *memNet) cut(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.side[a] != n.side[b]
}

// memQueue is the datagrams a member's queue holds, as a socket buffer does.
const memQueue = 4096

// listen is a Config.listen: a member of n bound at addr (port 0: a port of n's).
func (n *memNet) listen(addr netip.AddrPort) (memberlist.NodeAwareTransport, int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes == nil {
		n.nodes, n.port = map[string]*memNode{}, 7945
	}
	if addr.Port() == 0 {
		n.port++
		addr = netip.AddrPortFrom(addr.Addr(), uint16(n.port))
	}
	key := addr.String()
	if n.nodes[key] != nil {
		return nil, 0, fmt.Errorf("%s: address already in use", key)
	}
	m := &memNode{net: n, addr: addr, packets: make(chan *memberlist.Packet, memQueue),
		streams: make(chan net.Conn), done: make(chan struct{})}
	n.nodes[key] = m
	return m, int(addr.Port()), nil
}

func (n *memNet) node(addr string) *memNode {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodes[addr]
}

// memNode is one member's transport on a memNet.
type memNode struct {
	net     *memNet
	addr    netip.AddrPort
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

func (m *memNode) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip == "" {
		return m.addr.Addr().AsSlice(), int(m.addr.Port()), nil
	}
	return net.ParseIP(ip), port, nil
}

func (m *memNode) WriteTo(b []byte, addr string) (time.Time, error) {
	now := time.Now()
	to := m.net.node(addr)
	if to == nil || m.net.cut(m.addr.String(), addr) {
		return now, nil // nobody there, or a partition: a datagram is lost silently
	}
	m.net.bytes.Add(int64(len(b)))
	p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: net.UDPAddrFromAddrPort(m.addr), Timestamp: now}
	select {
	case to.packets <- p:
	default: // the queue is full: dropped, as by a full socket buffer
		m.net.lost.Add(1)
	}
	return now, nil
}

func (m *memNode) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return m.WriteTo(b, a.Addr)
}

func (m *memNode) PacketCh() <-chan *memberlist.Packet { return m.packets }

func (m *memNode) StreamCh() <-chan net.Conn { return m.streams }

var errRefused = errors.New("connection refused")

func (m *memNode) DialTimeout(addr string, d time.Duration) (net.Conn, error) {
	to := m.net.node(addr)
	if to == nil {
		return nil, errRefused
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	if m.net.cut(m.addr.String(), addr) { // a partition: the connection times out
		<-timer.C
		return nil, os.ErrDeadlineExceeded
	}
	ours, theirs := memPipe(net.TCPAddrFromAddrPort(m.addr), net.TCPAddrFromAddrPort(to.addr), &m.net.bytes)
	select {
	case to.streams <- theirs:
		return ours, nil
	case <-to.done:
		return nil, errRefused
	case <-timer.C:
		return nil, os.ErrDeadlineExceeded
	}
}

func (m *memNode) DialAddressTimeout(a memberlist.Address, d time.Duration) (net.Conn, error) {
	return m.DialTimeout(a.Addr, d)
}

// Shutdown takes the member off the network: nothing reaches it any more.
func (m *memNode) Shutdown() error {
	m.once.Do(func() {
		m.net.mu.Lock()
		delete(m.net.nodes, m.addr.String())
		m.net.mu.Unlock()
		close(m.done)
	})
	return nil
}

// memPipe returns the two ends of a stream between a and b, each direction
// buffered as a socket's is (so both ends may write at once), with deadlines; the
// bytes written in either direction are added to count.
func memPipe(a, b net.Addr, count *atomic.Int64) (net.Conn, net.Conn) {
	ab := &memStream{data: make(chan []byte, 64), closed: make(chan struct{})}
	ba := &memStream{data: make(chan []byte, 64), closed: make(chan struct{})}
	return &memConn{in: ba, out: ab, local: a, remote: b, count: count, done: make(chan struct{})},
		&memConn{in: ab, out: ba, local: b, remote: a, count: count, done: make(chan struct{})}
}

// memStream is one direction of a memPipe; closed when its writer closes.
type memStream struct {
	data   chan []byte
	closed chan struct{}
	once   sync.Once
}

type memConn struct {
	in, out       *memStream
	local, remote net.Addr
	count         *atomic.Int64
	rest          []byte // of the chunk last read
	done          chan struct{}
	once          sync.Once

	mu                sync.Mutex
	readDue, writeDue time.Time
}

func (c *memConn) due(write bool) <-chan time.Time {
	c.mu.Lock()
	t := c.readDue
	if write {
		t = c.writeDue
	}
	c.mu.Unlock()
	if t.IsZero() {
		return nil
	}
	return time.After(time.Until(t))
}

func (c *memConn) Read(b []byte) (int, error) {
	if len(c.rest) == 0 {
		select {
		case <-c.done:
			return 0, net.ErrClosed
		default:
		}
		select {
		case chunk := <-c.in.data:
			c.rest = chunk
		case <-c.in.closed:
			select { // what was written before the close is still read
			case chunk := <-c.in.data:
				c.rest = chunk
			default:
				return 0, io.EOF
			}
		case <-c.done:
			return 0, net.ErrClosed
		case <-c.due(false):
			return 0, os.ErrDeadlineExceeded
		}
	}
	n := copy(b, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

func (c *memConn) Write(b []byte) (int, error) {
	select {
	case <-c.done:
		return 0, net.ErrClosed
	case <-c.in.closed: // the peer has gone: a reset
		return 0, errors.New("connection reset by peer")
	default:
	}
	chunk := append([]byte(nil), b...)
	select {
	case c.out.data <- chunk:
		c.count.Add(int64(len(b)))
		return len(b), nil
	case <-c.done:
		return 0, net.ErrClosed
	case <-c.in.closed:
		return 0, errors.New("connection reset by peer")
	case <-c.due(true):
		return 0, os.ErrDeadlineExceeded
	}
}

func (c *memConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.out.once.Do(func() { close(c.out.closed) })
	})
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

func (c *memConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDue, c.writeDue = t, t
	c.mu.Unlock()
	return nil
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDue = t
	c.mu.Unlock()
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDue = t
	c.mu.Unlock()
	return nil
}
