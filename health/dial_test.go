package health

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestDialErrorsAsDialContext: a probe's connection to an IP address and port fails
// with the words net.Dialer.DialContext uses (the status page and logs show them),
// refused and timed out alike, and an address by name still dials.
func TestDialErrorsAsDialContext(t *testing.T) {
	addr := coretest.ClosedPort(t)
	var d net.Dialer
	ctx := t.Context()
	_, want := d.DialContext(ctx, "tcp", addr)
	_, got := (*trace)(nil).dial(ctx, "tcp", addr)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("refused: %v, want %v", got, want)
	}
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	_, want = d.DialContext(expired, "tcp", "[::1]:1")
	_, got = (*trace)(nil).dial(expired, "tcp", "[::1]:1")
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("timed out: %v, want %v", got, want)
	}
	open := rawServer(t, func(c net.Conn, _ <-chan struct{}) {})
	_, port, _ := net.SplitHostPort(open)
	c, err := (*trace)(nil).dial(ctx, "tcp", net.JoinHostPort("localhost", port))
	if err != nil {
		t.Fatalf("dial by name: %v", err)
	}
	c.Close()
}

// TestProbeDialAsDialContext: the connection of an http or tcp probe (a socket of
// its own on Linux) fails with the words net.Dialer.DialContext uses, refused,
// timed out and cancelled alike, and a connection it opens carries bytes both ways
// and names both ends.
func TestProbeDialAsDialContext(t *testing.T) {
	var d net.Dialer
	ctx := t.Context()
	refused := coretest.ClosedPort(t)
	expired, cancelExpired := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancelExpired()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		addr  string
		limit time.Duration
	}{
		{"refused", ctx, refused, time.Second},
		{"timed out", expired, "[::1]:1", time.Second},
		{"cancelled", cancelled, "127.0.0.1:1", time.Second},
		{"connect limit passed", ctx, "127.0.0.1:1", time.Nanosecond},
	} {
		dctx, cancel := context.WithTimeout(tc.ctx, tc.limit)
		_, want := d.DialContext(dctx, "tcp", tc.addr)
		cancel()
		_, got := (*trace)(nil).dialProbe(tc.ctx, newProbeAddr(tc.addr), tc.limit)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
		if !errors.Is(got, tc.ctx.Err()) && tc.ctx.Err() != nil {
			t.Errorf("%s: %v is not %v", tc.name, got, tc.ctx.Err())
		}
	}
	addr := rawServer(t, func(c net.Conn, _ <-chan struct{}) {
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err == nil {
			c.Write(b)
		}
	})
	c, err := (*trace)(nil).dialProbe(ctx, newProbeAddr(addr), time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatalf("write: %v", err)
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
		t.Fatalf("read %q, %v; want the echo of ping", b, err)
	}
	if c.RemoteAddr().String() != addr {
		t.Errorf("remote address %v, want %s", c.RemoteAddr(), addr)
	}
	if la, ok := c.LocalAddr().(*net.TCPAddr); !ok || !la.IP.IsLoopback() || la.Port == 0 {
		t.Errorf("local address %v, want a loopback address and port", c.LocalAddr())
	}
}
