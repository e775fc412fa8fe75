//go:build !linux

package health

import (
	"context"
	"net"
	"net/netip"
)

// streamDial dials ap with net.Dialer: the socket of a probe's own is Linux's only.
func streamDial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	return libraryDial(ctx, "tcp", ap.String())
}
