package r53api

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/route53"
)

// TestSlowBodiesLockNoSignedClientOut: 72 connections that send a request's
// headers and then its body a byte at a time hold no slot a signed client needs
// (before, each counted as being answered while its body was read, and they held
// every slot until their read timeout).
func TestSlowBodiesLockNoSignedClientOut(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	stop := make(chan struct{})
	defer close(stop)
	for i := range 72 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%8))}}
		conn, err := d.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatalf("slow connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /2013-04-01/healthcheck HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nx", s.Addr())
		go func() { // a byte a second, until the test ends or the server closes it
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for range 30 {
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
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // well under the body's 10 s
		_, err := c.ListHostedZones(ctx, &route53.ListHostedZonesInput{})
		cancel()
		if err != nil {
			t.Fatalf("signed request %d beside 72 slow bodies: %v", i+1, err)
		}
	}
}
