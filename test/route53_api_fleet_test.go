package test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// r53Fleet is three CoreDNS processes in one fleet, each serving example.org and
// the Route 53 API, the API's state replicated among them. The control ports and
// data directories are the members' for good (raft's configuration names the
// ports); every start takes fresh DNS, API and gossip ports, so that a restart
// does not depend on its old ports still being free on a busy machine.
type r53Fleet struct {
	dir, keys, keyFile string
	ctl                []int
	ports              []int    // DNS, of the running members
	apis               []string // Route 53 API addresses, of the running members
	srvs               []*coretest.Server
	rules, extra       string // lines added to the controls block, and to the healthroute block
}

func newR53Fleet(t *testing.T) *r53Fleet {
	t.Helper()
	coretest.Binary(t)
	f := &r53Fleet{dir: t.TempDir()}
	f.keys = writeR53Keys(t, f.dir)
	key := make([]byte, 32)
	rand.Read(key)
	f.keyFile = filepath.Join(f.dir, "gossip.key")
	if err := os.WriteFile(f.keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.ctl = append(f.ctl, coretest.FreePort(t))
	}
	return f
}

// corefiles returns each member's Corefile on fresh DNS, API and gossip ports,
// and notes the DNS and API ports.
func (f *r53Fleet) corefiles(t *testing.T) []string {
	t.Helper()
	n := len(f.ctl)
	gossip := make([]int, n)
	f.ports, f.apis = make([]int, n), make([]string, n)
	for i := range n {
		f.ports[i], gossip[i] = coretest.FreePort(t), coretest.FreePort(t)
		f.apis[i] = fmt.Sprintf("127.0.0.1:%d", coretest.FreePort(t))
	}
	var out []string
	for i := range n {
		var join, voters []string
		for j := range n {
			if j != i {
				join = append(join, fmt.Sprintf("127.0.0.1:%d", gossip[j]))
			}
			voters = append(voters, fmt.Sprintf("dns-%c=127.0.0.1:%d", 'a'+j, f.ctl[j]))
		}
		out = append(out, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		route53_api %s {
			access_keys %s
		}
		fleet {
			bind 127.0.0.1:%d
			join %s
			name dns-%c
			key_file %s
		}
		controls {
			bind 127.0.0.1:%d
			data_dir %s
			voters %s
			%s
		}
		%s
	}
}`, f.ports[i], f.apis[i], f.keys, gossip[i], strings.Join(join, " "), 'a'+i, f.keyFile, f.ctl[i], filepath.Join(f.dir, fmt.Sprintf("state-%d", i)), strings.Join(voters, " "), f.rules, f.extra))
	}
	return out
}

// startAll starts every member, one after the other.
func (f *r53Fleet) startAll(t *testing.T) {
	t.Helper()
	f.srvs = nil
	for i, c := range f.corefiles(t) {
		f.srvs = append(f.srvs, coretest.Start(t, c, f.ports[i], "example.org"))
	}
}

// TestRoute53APIFleetReplicatesAndSurvivesRestart submits a change through member
// 1 of three: it is INSYNC once all three answer from it, and they do; then every
// member is stopped and started again: the record sets answer from the first
// query, and every member's API lists them.
func TestRoute53APIFleetReplicatesAndSurvivesRestart(t *testing.T) {
	f := newR53Fleet(t)
	f.startAll(t)
	zone := r53api.ZoneID("example.org.")
	c0 := r53Client(f.apis[0], r53KeyID, r53Secret)
	ctx := context.Background()
	var err error
	waitUntil(t, 20*time.Second, "the fleet accepts a change (a leader elected)", func() bool {
		_, err = c0.ChangeTagsForResource(ctx, &route53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone,
			ResourceId: aws.String(zone), AddTags: []types.Tag{{Key: aws.String("fleet"), Value: aws.String("three")}}})
		return err == nil
	}, func() string { return fmt.Sprint(err) })
	checkID := createCheck(t, c0, "fleet-up", healthyEndpoint(t))
	start := time.Now()
	out, err := c0.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{
			create(aSet("w.example.org", "192.0.2.1", "one", func(rs *types.ResourceRecordSet) { rs.Weight = aws.Int64(1); rs.HealthCheckId = aws.String(checkID) })),
			create(aSet("w.example.org", "192.0.2.2", "two", func(rs *types.ResourceRecordSet) { rs.Weight = aws.Int64(0) })),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	waitInSync(t, c0, aws.ToString(out.ChangeInfo.Id))
	t.Logf("change INSYNC on 3 members %v after it was submitted", time.Since(start).Round(time.Millisecond))
	for i, s := range f.srvs {
		if got := answersA(s.Query(t, "w.example.org", dns.TypeA)); !slices.Equal(got, []string{"192.0.2.1"}) {
			t.Errorf("member %d answers %v once the change is INSYNC, want 192.0.2.1", i, got)
		}
	}

	c2 := r53Client(f.apis[2], r53KeyID, r53Secret)
	var obs []types.HealthCheckObservation
	waitUntil(t, 30*time.Second, "member 3 reports every member's observation of the check", func() bool {
		st, err := c2.GetHealthCheckStatus(ctx, &route53.GetHealthCheckStatusInput{HealthCheckId: aws.String(checkID)})
		if err != nil {
			return false
		}
		obs = st.HealthCheckObservations
		ok := 0
		for _, o := range obs {
			if strings.HasPrefix(aws.ToString(o.StatusReport.Status), "Success") && strings.HasPrefix(string(o.Region), "dns-") {
				ok++
			}
		}
		return ok == 3
	}, func() string { return fmt.Sprintf("%+v", obs) })

	for _, s := range f.srvs {
		s.Stop()
	}
	f.startAll(t)
	for i, s := range f.srvs {
		if got := answersA(s.Query(t, "w.example.org", dns.TypeA)); !slices.Equal(got, []string{"192.0.2.1"}) {
			t.Errorf("member %d answers %v after the restart, want 192.0.2.1", i, got)
		}
		list, err := r53Client(f.apis[i], r53KeyID, r53Secret).ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone)})
		if err != nil || len(list.ResourceRecordSets) != 3 {
			t.Errorf("member %d lists %v after the restart (%v), want the SOA and the 2 record sets", i, list, err)
		}
	}
}
