package health

import (
	"context"
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
