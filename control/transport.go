package control

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
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

// mux is raft's StreamLayer on the control port. Every connection is TLS 1.3,
// mutually authenticated by keys derived from the fleet key: each voter holds an
// ed25519 key derived from the fleet key and its member name (memberKey), in a
// self-signed certificate. The listener accepts a dialer whose certificate holds
// one of the voters' keys; the dialer accepts a listener whose certificate holds
// the key of the voter it meant to dial, so a relay on a voter's address reaches
// nothing: it cannot finish either handshake, and cannot read or inject a frame of
// a session it relays. The first byte inside the session is its kind. Forwarded
// requests go to serve; raft's go to Accept.
type mux struct {
	ln      net.Listener
	serve   func(net.Conn) // a forwarded request's connection; serve closes it
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	refused func() // counts a connection refused at the handshake

	cert   tls.Certificate
	voters map[string]ed25519.PublicKey // member name -> its key
	names  map[string]string            // control address -> member name
}

// memberKey derives member name's key from the fleet key (HKDF-SHA256).
func memberKey(fleetKey []byte, name string) ed25519.PrivateKey {
	seed, err := hkdf.Key(sha256.New, fleetKey, []byte("healthroute control port"), "member "+name, ed25519.SeedSize)
	if err != nil {
		panic(err) // only for a length HKDF-SHA256 cannot give; SeedSize is 32
	}
	return ed25519.NewKeyFromSeed(seed)
}

// selfSigned returns a certificate of key for member name.
func selfSigned(key ed25519.PrivateKey, name string) tls.Certificate {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		panic(err) // a fixed template and an ed25519 key: cannot fail
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func newMux(ln net.Listener, key []byte, self string, voters []Server, serve func(net.Conn), refused func()) *mux {
	m := &mux{ln: ln, serve: serve, conns: make(chan net.Conn), done: make(chan struct{}), refused: refused}
	m.setKeys(key, self, voters)
	go m.loop()
	return m
}

// setKeys derives this member's certificate and every voter's key.
func (m *mux) setKeys(key []byte, self string, voters []Server) {
	m.cert = selfSigned(memberKey(key, self), self)
	m.voters, m.names = map[string]ed25519.PublicKey{}, map[string]string{}
	for _, v := range voters {
		m.voters[v.ID] = memberKey(key, v.ID).Public().(ed25519.PublicKey)
		m.names[v.Addr] = v.ID
	}
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

// ServerAddr implements raft.ServerAddressProvider: raft dials a voter at the
// address this member's voters list gives it, never at one a configuration from
// another member's log holds (members may reach each other at different
// addresses, through proxies or NAT), so dial always knows whose key to expect.
func (m *mux) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	for addr, name := range m.names {
		if name == string(id) {
			return raft.ServerAddress(addr), nil
		}
	}
	return "", fmt.Errorf("%s is not in this member's voters list", id)
}

// peerKey returns the ed25519 key of the one certificate a peer presented.
func peerKey(raw [][]byte) (ed25519.PublicKey, error) {
	if len(raw) != 1 {
		return nil, fmt.Errorf("%d certificates, expected one", len(raw))
	}
	cert, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return nil, err
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("not an ed25519 key")
	}
	return pub, nil
}

// admit runs the handshake of one inbound connection and hands it on.
func (m *mux) admit(raw net.Conn) {
	raw.SetDeadline(time.Now().Add(handshakeTimeout))
	c := tls.Server(raw, &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{m.cert},
		ClientAuth:   tls.RequireAnyClientCert,
		VerifyPeerCertificate: func(certs [][]byte, _ [][]*x509.Certificate) error {
			pub, err := peerKey(certs)
			if err != nil {
				return err
			}
			for _, v := range m.voters {
				if pub.Equal(v) {
					return nil
				}
			}
			return errors.New("its certificate is no voter's: it does not hold the fleet key")
		},
	})
	kind := make([]byte, 1)
	err := c.Handshake()
	if err == nil {
		_, err = io.ReadFull(c, kind)
	}
	if err != nil {
		c.Close()
		if m.refused != nil {
			m.refused()
		}
		logLimited("handshake", "control port %s: refused a connection from %s: %v", m.ln.Addr(), raw.RemoteAddr(), err)
		return
	}
	raw.SetDeadline(time.Time{})
	connlimit.Hold(raw) // proved the key: the listener keeps it whatever comes
	switch kind[0] {
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

// dial connects to a voter's control port as kind: the listener must prove it is
// the voter this member's configuration puts at addr.
func (m *mux) dial(addr string, kind byte, timeout time.Duration) (net.Conn, error) {
	if _, ok := m.names[addr]; !ok {
		return nil, fmt.Errorf("%s is no voter's control address", addr)
	}
	raw, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return m.client(raw, addr, kind, timeout)
}

// client runs the dialer's side of the handshake on raw, connected to addr.
func (m *mux) client(raw net.Conn, addr string, kind byte, timeout time.Duration) (net.Conn, error) {
	name := m.names[addr]
	want := m.voters[name]
	raw.SetDeadline(time.Now().Add(timeout))
	c := tls.Client(raw, &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{m.cert},
		InsecureSkipVerify: true, // the peer's key is checked below, against the one derived for name
		VerifyPeerCertificate: func(certs [][]byte, _ [][]*x509.Certificate) error {
			pub, err := peerKey(certs)
			if err != nil {
				return err
			}
			if !pub.Equal(want) {
				return fmt.Errorf("the listener is not voter %s (its certificate holds another key): a relay, or a voters list that differs between members", name)
			}
			return nil
		},
	})
	if err := c.Handshake(); err != nil {
		c.Close()
		logLimited("dial", "control port: refused %s at %s: %v", name, addr, err)
		return nil, err
	}
	if _, err := c.Write([]byte{kind}); err != nil {
		c.Close()
		return nil, err
	}
	raw.SetDeadline(time.Time{})
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
