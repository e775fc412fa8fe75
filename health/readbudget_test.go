package health

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// A gRPC endpoint that answers the connection preface and then floods HTTP/2 pings
// (each of which the client acknowledges) fails the probe once it has read
// maxGRPCBytes, not after its whole timeout, and the probe reads no more.
func TestGRPCPingFloodFailsWithinReadBudget(t *testing.T) {
	var sent atomic.Int64
	addr := rawServer(t, func(c net.Conn, done <-chan struct{}) {
		go io.Copy(io.Discard, c)                                           // the client's preface, settings and ping acks
		settings := []byte{0, 0, 0, 0x4, 0, 0, 0, 0, 0}                     // SETTINGS, empty
		ping := []byte{0, 0, 8, 0x6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8} // PING, 8 bytes
		if _, err := c.Write(settings); err != nil {
			return
		}
		batch := make([]byte, 0, 256*len(ping))
		for range 256 {
			batch = append(batch, ping...)
		}
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		for range 100_000 { // bounded; the client's cut or the deadline ends it sooner
			n, err := c.Write(batch)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	const timeout = 3 * time.Second
	err, took := probeOnce(t, &Spec{Name: "t", Type: GRPC, Target: "grpc://" + addr, Timeout: timeout})
	if err == nil {
		t.Fatal("probe passed; want a failure")
	}
	if took >= timeout {
		t.Errorf("probe took %s (%v); want it cut by its read budget before its %s timeout", took, err, timeout)
	}
}

// budgetConn reads at most its budget, however the reads are sized, and fails after.
func TestBudgetConnStopsAtItsBound(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		buf := make([]byte, 1000)
		for range 10 {
			if _, err := b.Write(buf); err != nil {
				return
			}
		}
		b.Close()
	}()
	c := newBudgetConn(a, 2500)
	total := 0
	buf := make([]byte, 700)
	var err error
	for range 20 {
		var n int
		n, err = c.Read(buf)
		total += n
		if err != nil {
			break
		}
	}
	if total != 2500 || err == nil {
		t.Errorf("read %d bytes, then %v; want 2500 bytes, then an error", total, err)
	}
}
