package r53api

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// TestLastFailureReasonPerChecker answers, through the SDK, the last failure
// reason of each checker that has one, with its address, and no observation for
// a checker that never failed; an unknown check is NoSuchHealthCheck.
func TestLastFailureReasonPerChecker(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	obs := []Observation{
		{Checker: "m1", Addr: "127.0.0.1", Healthy: true, At: at, Reason: "dial tcp 192.0.2.1:80: connect: connection refused"},
		{Checker: "m2", Addr: "127.0.0.2", Healthy: true, At: at},
		{Checker: "m3", Addr: "127.0.0.3", At: at, Reason: "HTTP status 503"},
	}
	_, c := startBackend(t, DefaultLimits, Backend{Zones: func() []Zone { return nil }, Status: func(string) []Observation { return obs }})
	ctx := context.Background()
	hc, err := c.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("r"), HealthCheckConfig: &types.HealthCheckConfig{
		Type: types.HealthCheckTypeTcp, IPAddress: aws.String("192.0.2.1"), Port: aws.Int32(80)}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.GetHealthCheckLastFailureReason(ctx, &route53.GetHealthCheckLastFailureReasonInput{HealthCheckId: hc.HealthCheck.Id})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range out.HealthCheckObservations {
		got = append(got, string(o.Region)+" "+aws.ToString(o.IPAddress)+" "+aws.ToString(o.StatusReport.Status)+" "+aws.ToTime(o.StatusReport.CheckedTime).UTC().Format(time.RFC3339))
	}
	want := []string{"m1 127.0.0.1 Failure: dial tcp 192.0.2.1:80: connect: connection refused 2026-01-02T03:04:05Z", "m3 127.0.0.3 Failure: HTTP status 503 2026-01-02T03:04:05Z"}
	if !slices.Equal(got, want) {
		t.Errorf("last failure reasons %q, want %q", got, want)
	}
	if _, err := c.GetHealthCheckLastFailureReason(ctx, &route53.GetHealthCheckLastFailureReasonInput{HealthCheckId: aws.String("nope")}); code(err) != "NoSuchHealthCheck" {
		t.Errorf("an unknown check: %v, want NoSuchHealthCheck", err)
	}
}

// TestCheckerIPRangesAreTheFleets answers the checkers' addresses as CIDR blocks,
// and an empty list without a fleet.
func TestCheckerIPRangesAreTheFleets(t *testing.T) {
	ips := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	_, c := startBackend(t, DefaultLimits, Backend{Zones: func() []Zone { return nil }, Lookups: Lookups{CheckerIPs: func() []netip.Prefix { return ips }}})
	out, err := c.GetCheckerIpRanges(context.Background(), &route53.GetCheckerIpRangesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1/32", "::1/128"}; !slices.Equal(out.CheckerIpRanges, want) {
		t.Errorf("checker ranges %q, want %q", out.CheckerIpRanges, want)
	}
	_, c = startTest(t, DefaultLimits)
	out, err = c.GetCheckerIpRanges(context.Background(), &route53.GetCheckerIpRangesInput{})
	if err != nil || len(out.CheckerIpRanges) != 0 {
		t.Errorf("without a fleet: %v, %v; want an empty list", out, err)
	}
}
