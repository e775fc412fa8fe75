package r53api

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/route53"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestSlowBodiesLockNoSignedClientOut: 72 connections that send a request's
// headers and then its body a byte at a time hold no slot a signed client needs
// (before, each counted as being answered while its body was read, and they held
// every slot until their read timeout).
func TestSlowBodiesLockNoSignedClientOut(t *testing.T) {
	s, c := startTest(t, DefaultLimits, Zone{Name: "example.org."})
	coretest.SlowBodies(t, s.Addr(), 72)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // well under the body's 10 s
		_, err := c.ListHostedZones(ctx, &route53.ListHostedZonesInput{})
		cancel()
		if err != nil {
			t.Fatalf("signed request %d beside 72 slow bodies: %v", i+1, err)
		}
	}
}
