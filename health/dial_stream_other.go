//go:build !linux

package health

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// streamTarget is an IP address and port: the socket of a probe's own is Linux's
// only, elsewhere streamDial dials with net.Dialer.
type streamTarget struct{ addr string }

func newStreamTarget(ap netip.AddrPort) *streamTarget { return &streamTarget{addr: ap.String()} }

func streamDial(ctx context.Context, t *streamTarget, deadline time.Time) (net.Conn, error) {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return libraryDial(ctx, "tcp", t.addr)
}
