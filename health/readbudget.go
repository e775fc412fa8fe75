package health

import (
	"fmt"
	"net"
	"sync/atomic"
)

// maxGRPCBytes bounds the bytes one grpc probe reads from its connection, TLS and
// HTTP/2 framing included: the health response is at most maxGRPCMessage, and an
// endpoint that sends more (a flood of pings or settings, headers without end)
// fails the probe instead of holding it busy until its timeout.
const maxGRPCBytes = 16 * maxGRPCMessage

// budgetConn is a connection that reads at most max bytes in all; past them it
// fails its reads and closes itself.
type budgetConn struct {
	net.Conn
	left atomic.Int64
	max  int64
}

func newBudgetConn(c net.Conn, max int64) *budgetConn {
	b := &budgetConn{Conn: c, max: max}
	b.left.Store(max)
	return b
}

func (b *budgetConn) Read(p []byte) (int, error) {
	left := b.left.Load()
	if left <= 0 {
		b.Conn.Close()
		return 0, fmt.Errorf("endpoint sent more than a probe reads (%d bytes)", b.max)
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.Conn.Read(p)
	b.left.Add(-int64(n))
	return n, err
}
