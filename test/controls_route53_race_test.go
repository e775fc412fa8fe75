package test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestControlsRacingRoute53BatchesThenRestart: CREATE raceN CNAME and CREATE raceN
// A sent at once, 10 names: each batch alone is valid against the state both were
// checked on, but not both together (a CNAME shares its name with nothing). The
// state machine refuses the second in the leader's order, so exactly one of each
// pair is applied, every later batch to the zone is accepted, and the server
// restarts and answers.
func TestControlsRacingRoute53BatchesThenRestart(t *testing.T) {
	s := startR53(t, `        record www.example.org. simple {
            A 192.0.2.80
        }`)
	ctx := context.Background()
	for n := range 10 {
		name := fmt.Sprintf("race%d.example.org.", n)
		cname := &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeCname, TTL: aws.Int64(30),
			ResourceRecords: []types.ResourceRecord{{Value: aws.String("www.example.org.")}}}
		batches := []*types.ResourceRecordSet{cname, aSet(name, "192.0.2.1", "", nil)}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, rs := range batches {
			wg.Go(func() {
				_, errs[i] = s.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
					HostedZoneId: aws.String(s.zoneID), ChangeBatch: &types.ChangeBatch{Changes: []types.Change{create(rs)}}})
			})
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("%s: CNAME %v, A %v: want exactly one applied", name, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && apiCode(err) != "InvalidChangeBatch" {
				t.Fatalf("%s: refused with %v, want InvalidChangeBatch", name, err)
			}
		}
	}
	id := s.change(t, create(aSet("after.example.org.", "192.0.2.9", "", nil)))
	waitInSync(t, s.client, id)
	corefile, err := os.ReadFile(filepath.Join(s.srv.Dir, "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(s.srv.Addr)
	port, _ := strconv.Atoi(p)
	s.srv.Stop()
	s.srv = coretest.Start(t, string(corefile), port, "example.org")
	if got := answersA(s.srv.Query(t, "after.example.org", dns.TypeA)); len(got) != 1 || got[0] != "192.0.2.9" {
		t.Fatalf("after the restart: after.example.org A %v, want 192.0.2.9", got)
	}
}
