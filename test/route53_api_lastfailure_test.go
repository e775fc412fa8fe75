package test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// TestRoute53APILastFailureReasonPerCheckerWithTheAWSCLI creates, through
// member 1 of three, a health check of an address where nothing listens and a
// record set using it; aws route53 get-health-check-last-failure-reason through
// member 3 lists each member's reason (its checkers: all three), and
// get-checker-ip-ranges lists the members' address.
func TestRoute53APILastFailureReasonPerCheckerWithTheAWSCLI(t *testing.T) {
	f := newR53Fleet(t)
	f.startAll(t)
	zone := r53api.ZoneID("example.org.")
	c0 := r53Client(f.apis[0], r53KeyID, r53Secret)
	ctx := context.Background()
	var checkID string
	var err error
	port := coretest.FreePort(t) // nothing listens there
	waitUntil(t, 20*time.Second, "the fleet accepts a health check (a leader elected)", func() bool {
		var out *route53.CreateHealthCheckOutput
		out, err = c0.CreateHealthCheck(ctx, &route53.CreateHealthCheckInput{CallerReference: aws.String("down"),
			HealthCheckConfig: &types.HealthCheckConfig{Type: types.HealthCheckTypeTcp, IPAddress: aws.String("127.0.0.1"),
				Port: aws.Int32(int32(port)), RequestInterval: aws.Int32(10), FailureThreshold: aws.Int32(1)}})
		if err == nil {
			checkID = aws.ToString(out.HealthCheck.Id)
		}
		return err == nil
	}, func() string { return fmt.Sprint(err) })
	if _, err := c0.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{
			create(aSet("f.example.org", "192.0.2.1", "p", func(rs *types.ResourceRecordSet) {
				rs.Failover, rs.HealthCheckId = types.ResourceRecordSetFailoverPrimary, aws.String(checkID)
			})),
			create(aSet("f.example.org", "192.0.2.2", "s", func(rs *types.ResourceRecordSet) { rs.Failover = types.ResourceRecordSetFailoverSecondary })),
		}}}); err != nil {
		t.Fatal(err)
	}

	cli := newAWSCLI(t, f.apis[2])
	var last string
	waitUntil(t, 45*time.Second, "member 3 lists every member's last failure reason", func() bool {
		var out struct {
			HealthCheckObservations []struct {
				Region, IPAddress string
				StatusReport      struct{ Status, CheckedTime string }
			}
		}
		raw, err := cli.run(t, "get-health-check-last-failure-reason", "--health-check-id", checkID)
		last = raw
		if err != nil || json.Unmarshal([]byte(raw), &out) != nil {
			return false
		}
		var members []string
		for _, o := range out.HealthCheckObservations {
			if strings.HasPrefix(o.StatusReport.Status, "Failure: ") && strings.Contains(o.StatusReport.Status, "refused") && o.IPAddress == "127.0.0.1" {
				members = append(members, o.Region)
			}
		}
		slices.Sort(members)
		return slices.Equal(members, []string{"dns-a", "dns-b", "dns-c"})
	}, func() string { return last })

	var ranges struct{ CheckerIpRanges []string }
	cli.json(t, &ranges, "get-checker-ip-ranges")
	if !slices.Equal(ranges.CheckerIpRanges, []string{"127.0.0.1/32"}) {
		t.Errorf("get-checker-ip-ranges: %v, want the members' address 127.0.0.1/32", ranges.CheckerIpRanges)
	}
}
