package coretest

import (
	"net"
	"sync"
	"testing"
)

// ClosedPort returns a loopback address (127.0.0.1:PORT) nothing listens on: a
// connection to it is refused at once.
func ClosedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Acceptor listens on loopback, accepts every connection and closes it: a healthy
// tcp target. It stops, and its goroutine ends, when the test ends.
func Acceptor(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}
