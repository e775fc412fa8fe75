package fleet

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coredns/coredns/plugin"
)

var datagramsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace,
	Subsystem: "healthroute",
	Name:      "fleet_gossip_datagrams_dropped_total",
	Help:      "Counter of gossip datagrams dropped before memberlist saw them, by reason: invalid (not a member's: does not authenticate with the key, or not a gossip message) or pace (over one source's pace).",
}, []string{"reason"})

var (
	droppedInvalid = datagramsDropped.WithLabelValues("invalid")
	droppedPace    = datagramsDropped.WithLabelValues("pace")
)

// transport is the fleet's memberlist transport: TCP as memberlist's own NetTransport
// handles it, and UDP read so that a datagram that cannot be a member's costs as
// little as the kernel's read of it. memberlist's NetTransport allocates a fresh
// 64 KiB buffer for every datagram before anything looks at it, so a flood of
// garbage at the gossip port (no key needed to send one) cost about a core in
// allocation and GC and halved DNS. Here one buffer is reused for every read; a
// datagram is checked before it is handed over (with a key: it must decrypt and
// authenticate with it, in a reused scratch buffer; without: its first byte must be
// a memberlist message type); only then is it copied, at its own size; and each
// source address may hand over at most packetsPerSource datagrams a second.
type transport struct {
	tcp   *net.TCPListener
	udp   *net.UDPConn
	gcm   cipher.AEAD // nil: no key, gossip in the clear
	logs  *stdlog.Logger
	packs chan *memberlist.Packet
	conns chan net.Conn
	wg    sync.WaitGroup
	done  atomic.Bool
	stop  chan struct{} // closed at Shutdown: hand nothing more over

	// Owned by readLoop alone.
	logged      time.Time // when the drops were last logged
	unlogged    uint64    // drops since then
	lastDrop    netip.AddrPort
	window      time.Time          // the start of the current pace window
	counts      map[netip.Addr]int // datagrams handed over from each source in it
	windowDrops int                // datagrams dropped in it
}

const (
	// packetsPerSource is how many datagrams one address may hand to memberlist in a
	// second. A member sends a few a second to each other member (probes, acks, gossip
	// rounds and heartbeats), so only a flood comes near it.
	packetsPerSource = 2000
	// maxSources bounds the pace table: past it the window starts again early.
	maxSources = 4096
	// udpReadSize is the largest datagram read; memberlist sends at most 1400 bytes
	// (UDPBufferSize) and a bigger one cannot be a member's, but reading the whole of
	// it keeps a too-large datagram from being taken for a short one.
	udpReadSize = 65536
	// readBatch is how many datagrams one read takes at most.
	readBatch = 32
	// floodDrops is how many drops in a second make the read loop pause between
	// drained batches, and floodPause how long it pauses: the socket buffer
	// (udpRecvBuf) holds well over a pause's worth of a 50,000-a-second flood.
	floodDrops = 1000
	floodPause = time.Millisecond
	// udpRecvBuf is the socket's receive buffer, as memberlist asks for.
	udpRecvBuf = 2 * 1024 * 1024
	// Sizes of memberlist's encrypted packet: version byte, nonce, GCM tag.
	encVersionSize, encNonceSize, encTagSize = 1, 12, 16
	// lastMessageType is memberlist's highest plain message type (errMsg).
	lastMessageType = 13
)

var _ memberlist.NodeAwareTransport = (*transport)(nil)

// newTransport binds TCP and UDP on bind (port 0: one the kernel picks, the same for
// both). With key, datagrams that do not authenticate with it are dropped.
func newTransport(bind netip.AddrPort, key []byte, logs *stdlog.Logger) (*transport, error) {
	t := &transport{logs: logs, packs: make(chan *memberlist.Packet), conns: make(chan net.Conn),
		stop: make(chan struct{}), counts: map[netip.Addr]int{}}
	if key != nil {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		if t.gcm, err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
	}
	tcp, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(bind))
	if err != nil {
		return nil, fmt.Errorf("TCP listener: %w", err)
	}
	port := tcp.Addr().(*net.TCPAddr).AddrPort().Port()
	udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(bind.Addr(), port)))
	if err != nil {
		tcp.Close()
		return nil, fmt.Errorf("UDP listener: %w", err)
	}
	for size := udpRecvBuf; size > 0; size /= 2 {
		if udp.SetReadBuffer(size) == nil {
			break
		}
	}
	t.tcp, t.udp = tcp, udp
	t.wg.Add(2)
	go t.acceptLoop()
	go t.readLoop()
	return t, nil
}

// Port is the port both listeners are bound to.
func (t *transport) Port() int { return t.tcp.Addr().(*net.TCPAddr).Port }

// FinalAdvertiseAddr implements memberlist.Transport, as memberlist's NetTransport
// does: the address given, else the one bound to, or for an unspecified one
// (0.0.0.0, the default bind) the host's private address.
func (t *transport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		a := net.ParseIP(ip)
		if a == nil {
			return nil, 0, fmt.Errorf("advertise address %q is not an IP address", ip)
		}
		if a4 := a.To4(); a4 != nil {
			a = a4
		}
		return a, port, nil
	}
	a := t.tcp.Addr().(*net.TCPAddr)
	if !a.IP.IsUnspecified() {
		return a.IP, a.Port, nil
	}
	ip, err := sockaddr.GetPrivateIP()
	if err != nil {
		return nil, 0, fmt.Errorf("finding the private address to advertise: %w", err)
	}
	if ip == "" {
		return nil, 0, errors.New("no private address found to advertise, and none given")
	}
	return net.ParseIP(ip), a.Port, nil
}

// WriteTo implements memberlist.Transport.
func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	ap, err := netip.ParseAddrPort(a.Addr)
	if err != nil {
		ua, rerr := net.ResolveUDPAddr("udp", a.Addr)
		if rerr != nil {
			return time.Time{}, rerr
		}
		ap = ua.AddrPort()
	}
	_, err = t.udp.WriteToUDPAddrPort(b, ap)
	return time.Now(), err
}

// PacketCh implements memberlist.Transport.
func (t *transport) PacketCh() <-chan *memberlist.Packet { return t.packs }

// DialTimeout implements memberlist.Transport.
func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport. Bound to a specific
// address, a member's connections leave from it, as its datagrams do (they are sent
// from the UDP listener): the others, and whatever forwards gossip between them (a
// NAT, a proxy), see one address per member whichever way it sends.
func (t *transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if local := t.tcp.Addr().(*net.TCPAddr); !local.IP.IsUnspecified() {
		if to, err := netip.ParseAddrPort(a.Addr); err == nil && to.Addr().Unmap().Is4() == (local.IP.To4() != nil) {
			d.LocalAddr, d.Control = &net.TCPAddr{IP: local.IP}, dialFromControl
		}
	}
	return d.Dial("tcp", a.Addr)
}

// StreamCh implements memberlist.Transport.
func (t *transport) StreamCh() <-chan net.Conn { return t.conns }

// Shutdown implements memberlist.Transport: it closes both listeners and waits for
// their goroutines.
func (t *transport) Shutdown() error {
	if t.done.Swap(true) {
		return nil
	}
	close(t.stop)
	t.tcp.Close()
	t.udp.Close()
	t.wg.Wait()
	return nil
}

func (t *transport) acceptLoop() {
	defer t.wg.Done()
	delay := time.Duration(0)
	for {
		c, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.done.Load() {
				return
			}
			// Out of descriptors, most likely: back off rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t.logs.Printf("[ERR] fleet: accepting a gossip connection: %v", err)
			time.Sleep(delay)
			continue
		}
		delay = 0
		select {
		case t.conns <- c:
		case <-t.stop:
			c.Close()
			return
		}
	}
}

// readLoop reads the gossip datagrams in batches (recvmmsg where the system has it)
// and hands those of members to memberlist. Under a flood (more than floodDrops
// datagrams dropped in the current second) it drains the socket, then waits
// floodPause before reading again: the flood then costs one wakeup a pause instead
// of one a datagram, while the kernel queues what arrives meanwhile (a member's
// heartbeats included) in the socket's buffer.
func (t *transport) readLoop() {
	defer t.wg.Done()
	msgs := make([]ipv4.Message, readBatch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, udpReadSize)}
	}
	var batch interface {
		ReadBatch([]ipv4.Message, int) (int, error)
	} = ipv4.NewPacketConn(t.udp)
	if local, ok := t.udp.LocalAddr().(*net.UDPAddr); ok && local.IP.To4() == nil {
		batch = ipv6.NewPacketConn(t.udp)
	}
	var scratch []byte
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		n, err := batch.ReadBatch(msgs, 0)
		now := time.Now()
		if err != nil {
			if t.done.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			t.logs.Printf("[ERR] fleet: reading gossip datagrams: %v", err)
			continue
		}
		for i := range msgs[:n] {
			if !t.handle(&msgs[i], now, &scratch) {
				return
			}
		}
		if n < len(msgs) && t.flooded(now) {
			pause.Reset(floodPause)
			select {
			case <-pause.C:
			case <-t.stop:
				return
			}
		}
	}
}

// handle checks one datagram read and hands it to memberlist if it is a member's;
// false when the transport is shutting down.
func (t *transport) handle(m *ipv4.Message, now time.Time, scratch *[]byte) bool {
	from := addrPort(m.Addr)
	b := m.Buffers[0][:m.N]
	var ok bool
	if m.Flags&msgTrunc != 0 { // larger than any member sends
		ok = false
	} else {
		ok, *scratch = t.member(b, *scratch)
	}
	if !ok {
		droppedInvalid.Inc()
		gossipErrors.Inc()
		t.drop(from, now)
		return true
	}
	if !t.pace(from.Addr().Unmap(), now) {
		droppedPace.Inc()
		t.drop(from, now)
		return true
	}
	pkt := &memberlist.Packet{Buf: append([]byte(nil), b...), From: net.UDPAddrFromAddrPort(from), Timestamp: now}
	select {
	case t.packs <- pkt:
		return true
	case <-t.stop:
		return false
	}
}

// addrPort is a datagram's source address.
func addrPort(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.AddrPort()
	}
	return netip.AddrPort{}
}

// flooded reports whether more than floodDrops datagrams were dropped in the
// current pace window.
func (t *transport) flooded(now time.Time) bool {
	return now.Sub(t.window) < time.Second && t.windowDrops > floodDrops
}

// dropLogEvery is how often dropped datagrams are logged, as one line that counts them.
const dropLogEvery = 10 * time.Second

// drop notes a dropped datagram; once every dropLogEvery, one line says how many were
// dropped since the last, so that a flood costs no formatting per datagram.
func (t *transport) drop(from netip.AddrPort, now time.Time) {
	t.unlogged++
	t.windowDrops++
	t.lastDrop = from
	if now.Sub(t.logged) < dropLogEvery {
		return
	}
	t.logs.Printf("[WARN] fleet: dropped %d gossip datagrams that were not a member's or came too fast (the last from %s)", t.unlogged, t.lastDrop)
	t.unlogged, t.logged = 0, now
}

// member reports whether b can be a datagram from a member: with a key, it decrypts
// and authenticates (into scratch, which it returns grown as needed, so that a
// rejected datagram allocates nothing once scratch has grown); without, it starts
// with a memberlist message type.
func (t *transport) member(b, scratch []byte) (bool, []byte) {
	if len(b) == 0 {
		return false, scratch
	}
	if t.gcm == nil {
		return b[0] <= lastMessageType, scratch
	}
	if len(b) < encVersionSize+encNonceSize+encTagSize || b[0] > 1 {
		return false, scratch
	}
	nonce := b[encVersionSize : encVersionSize+encNonceSize]
	sealed := b[encVersionSize+encNonceSize:]
	if cap(scratch) < len(sealed) {
		scratch = make([]byte, 0, max(len(sealed), 2048))
	}
	_, err := t.gcm.Open(scratch[:0], nonce, sealed, nil)
	return err == nil, scratch
}

// pace counts a datagram from addr in the current one-second window and reports
// whether the source is still within packetsPerSource.
func (t *transport) pace(addr netip.Addr, now time.Time) bool {
	if now.Sub(t.window) >= time.Second || len(t.counts) >= maxSources {
		clear(t.counts)
		t.window, t.windowDrops = now, 0
	}
	t.counts[addr]++
	return t.counts[addr] <= packetsPerSource
}
