package coretest

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// SlowBodies opens n connections to the HTTP listener at addr, from eight
// loopback addresses (127.0.0.2 to 127.0.0.9), each sending a POST's headers
// and then a byte of its 100,000-byte body a second, for at most a minute; they
// stop and close when the test ends.
func SlowBodies(t testing.TB, addr string, n int) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%8))}}
		conn, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("slow connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /2013-04-01/healthcheck HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nx", addr)
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for range 60 {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}()
	}
}
