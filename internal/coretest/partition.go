package coretest

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Gossiper is one member behind a Partition: it listens (UDP and TCP) at Bind and
// advertises Advertise, where the Partition listens for it. Members bind distinct
// loopback IPs, so the Partition tells who sends by the source IP.
type Gossiper struct {
	Bind, Advertise netip.AddrPort
}

// Partition is a loopback network between members that reach each other at their
// advertised addresses: for each member, a UDP and a TCP proxy listen on its
// Advertise address and forward to its Bind address, from a socket bound to the
// sender's own IP (port 0), so that the member still sees one source address per
// member. Split drops traffic between groups of members and closes the open TCP
// connections across them; Heal lets everything through again. It is closed, and
// every goroutine it started has ended, when the test ends.
type Partition struct {
	ms   []Gossiper
	byIP map[netip.Addr]int // a member's bind IP -> its index

	mu     sync.Mutex
	group  []int // by member, while split; nil: no split
	conns  map[*proxyConn]struct{}
	closed bool
	slots  chan struct{} // one per TCP connection being forwarded

	udp    []*net.UDPConn // by member: its advertised address
	tcp    []*net.TCPListener
	relays [][]*net.UDPConn // [from][to]: from's IP, port 0, sending to to's bind address
	wg     sync.WaitGroup

	// Forwarded and Dropped count datagrams and connections passed on and refused.
	Forwarded, Dropped atomic.Int64
}

const (
	// partitionMaxConns bounds the TCP connections open through a Partition at once;
	// past it a connection is closed at accept. A member opens one per message.
	partitionMaxConns = 256
	// partitionDialTimeout bounds connecting to a member's bind address.
	partitionDialTimeout = 2 * time.Second
)

type proxyConn struct {
	from, to int
	in, out  net.Conn
}

// NewPartition starts the proxies for ms (each with a distinct bind IP).
func NewPartition(t testing.TB, ms []Gossiper) *Partition {
	t.Helper()
	p := &Partition{ms: ms, byIP: map[netip.Addr]int{}, conns: map[*proxyConn]struct{}{},
		slots: make(chan struct{}, partitionMaxConns)}
	for i, m := range ms {
		if _, dup := p.byIP[m.Bind.Addr()]; dup {
			t.Fatalf("partition: members %d and %d bind the same IP %s", p.byIP[m.Bind.Addr()], i, m.Bind.Addr())
		}
		p.byIP[m.Bind.Addr()] = i
	}
	t.Cleanup(p.close)
	for _, m := range ms {
		u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(m.Advertise))
		if err != nil {
			t.Fatalf("partition: %v", err)
		}
		p.udp = append(p.udp, u)
		l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(m.Advertise))
		if err != nil {
			t.Fatalf("partition: %v", err)
		}
		p.tcp = append(p.tcp, l)
	}
	p.relays = make([][]*net.UDPConn, len(ms))
	for from := range ms {
		p.relays[from] = make([]*net.UDPConn, len(ms))
		for to := range ms {
			if from == to {
				continue
			}
			r, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ms[from].Bind.Addr(), 0)))
			if err != nil {
				t.Fatalf("partition: %v", err)
			}
			p.relays[from][to] = r
		}
	}
	for i := range ms {
		p.wg.Add(2)
		go func() { defer p.wg.Done(); p.readUDP(i) }()
		go func() { defer p.wg.Done(); p.acceptTCP(i) }()
		for from := range ms {
			if from != i {
				p.wg.Add(1)
				go func() { defer p.wg.Done(); p.relayReplies(from, i) }()
			}
		}
	}
	return p
}

// Split cuts the members into groups (indexes into the members given to
// NewPartition): traffic between members of different groups is dropped, and open
// TCP connections between them are closed. A member in no group is cut off from
// every other.
func (p *Partition) Split(groups ...[]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.group = make([]int, len(p.ms))
	for i := range p.group {
		p.group[i] = -1 - i
	}
	for g, members := range groups {
		for _, i := range members {
			p.group[i] = g
		}
	}
	for c := range p.conns {
		if p.group[c.from] != p.group[c.to] {
			c.in.Close()
			c.out.Close()
			delete(p.conns, c)
		}
	}
}

// Heal ends a Split.
func (p *Partition) Heal() {
	p.mu.Lock()
	p.group = nil
	p.mu.Unlock()
}

// passes says whether traffic from member from may reach member to now, and counts it.
func (p *Partition) passes(from, to int) bool {
	p.mu.Lock()
	ok := p.group == nil || p.group[from] == p.group[to]
	p.mu.Unlock()
	if ok {
		p.Forwarded.Add(1)
	} else {
		p.Dropped.Add(1)
	}
	return ok
}

// sender returns the index of the member at source address a, or -1.
func (p *Partition) sender(a netip.Addr) int {
	if i, ok := p.byIP[a.Unmap()]; ok {
		return i
	}
	return -1
}

// readUDP forwards the datagrams sent to member to's advertised address.
func (p *Partition) readUDP(to int) {
	buf := make([]byte, 65536)
	for {
		n, src, err := p.udp[to].ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from := p.sender(src.Addr())
		if from < 0 || from == to {
			p.Dropped.Add(1)
			continue
		}
		if p.passes(from, to) {
			p.relays[from][to].WriteToUDPAddrPort(buf[:n], p.ms[to].Bind)
		}
	}
}

// relayReplies sends what member to answers to from's relay socket back to from, as
// sent from to's advertised address.
func (p *Partition) relayReplies(from, to int) {
	buf := make([]byte, 65536)
	for {
		n, _, err := p.relays[from][to].ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if p.passes(to, from) {
			p.udp[to].WriteToUDPAddrPort(buf[:n], p.ms[from].Bind)
		}
	}
}

// acceptTCP forwards the connections made to member to's advertised address.
func (p *Partition) acceptTCP(to int) {
	for {
		in, err := p.tcp[to].AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from := p.sender(in.RemoteAddr().(*net.TCPAddr).AddrPort().Addr())
		if from < 0 || from == to || !p.passes(from, to) {
			in.Close()
			continue
		}
		select {
		case p.slots <- struct{}{}:
		default: // at the limit
			p.Dropped.Add(1)
			in.Close()
			continue
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.pipe(from, to, in); <-p.slots }()
	}
}

// pipe connects in (from member from) to member to's bind address, dialled from
// from's IP, and copies both ways until either side closes or a Split cuts them.
func (p *Partition) pipe(from, to int, in net.Conn) {
	d := net.Dialer{Timeout: partitionDialTimeout, LocalAddr: &net.TCPAddr{IP: p.ms[from].Bind.Addr().AsSlice()}}
	out, err := d.Dial("tcp", p.ms[to].Bind.String())
	if err != nil {
		in.Close()
		return
	}
	c := &proxyConn{from: from, to: to, in: in, out: out}
	p.mu.Lock()
	if p.closed || p.group != nil && p.group[from] != p.group[to] { // closed or split while dialling
		p.mu.Unlock()
		in.Close()
		out.Close()
		p.Dropped.Add(1)
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	copyHalf := func(dst, src net.Conn) {
		io.Copy(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go copyHalf(out, in)
	go copyHalf(in, out)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// close stops every proxy and waits for their goroutines.
func (p *Partition) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.in.Close()
		c.out.Close()
	}
	p.mu.Unlock()
	for _, u := range p.udp {
		u.Close()
	}
	for _, l := range p.tcp {
		l.Close()
	}
	for _, rs := range p.relays {
		for _, r := range rs {
			if r != nil {
				r.Close()
			}
		}
	}
	p.wg.Wait()
}
