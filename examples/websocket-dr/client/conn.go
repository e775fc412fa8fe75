package client

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/coder/websocket"
	"github.com/miekg/dns"
)

// Resolver asks one DNS server (healthroute) for a name's A record. It keeps no
// cache: every (re)connect sees the answer healthroute gives now, which is stricter
// than honouring the TTL and is what makes failover reach a client at once.
type Resolver struct {
	Server  string        // host:port
	Timeout time.Duration // per query; default 1s
}

// Resolve returns the first address of the A answer for name.
func (r Resolver) Resolve(ctx context.Context, name string) (netip.Addr, error) {
	t := r.Timeout
	if t <= 0 {
		t = time.Second
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	c := &dns.Client{Timeout: t}
	in, _, err := c.ExchangeContext(ctx, m, r.Server)
	if err != nil {
		return netip.Addr{}, err
	}
	if in.Rcode != dns.RcodeSuccess {
		return netip.Addr{}, fmt.Errorf("rcode %s", dns.RcodeToString[in.Rcode])
	}
	for _, rr := range in.Answer {
		if a, ok := rr.(*dns.A); ok {
			if ip, ok := netip.AddrFromSlice(a.A.To4()); ok {
				return ip, nil
			}
		}
	}
	return netip.Addr{}, errors.New("no A record in the answer")
}

// DialWebSocket dials url with host as the Host header (the service name, not the
// address DNS gave).
func DialWebSocket(ctx context.Context, url, host string) (Conn, error) {
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Host: host})
	if err != nil {
		return nil, err
	}
	return wsConn{c}, nil
}

type wsConn struct{ c *websocket.Conn }

func (w wsConn) Read(ctx context.Context) ([]byte, error) {
	_, b, err := w.c.Read(ctx)
	return b, err
}

func (w wsConn) Write(ctx context.Context, b []byte) error {
	return w.c.Write(ctx, websocket.MessageText, b)
}

// Close drops the connection without the closing handshake: it is called when the
// peer is gone or unresponsive, where a handshake would only wait.
func (w wsConn) Close() error { return w.c.CloseNow() }
