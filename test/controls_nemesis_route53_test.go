package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// addRoute53API gives every member of f a Route 53 API listener (route53_api,
// signed with the test key) on a port of its own, before they start.
func (f *ctlFleet) addRoute53API() {
	f.t.Helper()
	keys := writeR53Keys(f.t, f.t.TempDir())
	for _, m := range f.ms {
		m.r53 = fmt.Sprintf("127.0.0.1:%d", coretest.FreePort(f.t))
		block := fmt.Sprintf("\thealthroute {\n\t\troute53_api %s {\n\t\t\taccess_keys %s\n\t\t}\n", m.r53, keys)
		if !strings.Contains(m.corefile, "\thealthroute {\n") {
			f.t.Fatalf("%s: no healthroute block in its Corefile", m.name)
		}
		m.corefile = strings.Replace(m.corefile, "\thealthroute {\n", block, 1)
	}
}

// r53History is what the Route 53 API clients did: the names of the record
// sets whose batch was acknowledged, with their address, and how many batches
// failed.
type r53History struct {
	mu     sync.Mutex
	acked  map[string]string // name -> A value
	failed int
}

// client sends ChangeResourceRecordSets batches through member c's Route 53 API
// until ctx ends, one every interval at most (each makes every member reload
// CoreDNS and acknowledge the generation it serves through raft: a heavy load). Each
// creates two new names (A records), applied together or not at all. The SDK
// signs them with the test key and does not retry (a retried CREATE would
// report a batch applied by its first try as refused: harmless, but it hides
// what happened).
func (h *r53History) client(ctx context.Context, f *ctlFleet, c int, interval time.Duration) {
	api := r53Client(f.ms[c].r53, r53KeyID, r53Secret)
	zone := aws.String(r53api.ZoneID("example.org."))
	for n := 0; n < 2000 && ctx.Err() == nil; n++ {
		if n > 0 {
			pause(interval)
		}
		names := map[string]string{}
		var changes []types.Change
		for k := range 2 {
			name := fmt.Sprintf("r53-%d-%d-%d.example.org.", c, n, k)
			names[name] = fmt.Sprintf("192.0.2.%d", 10+(n*2+k)%200)
			changes = append(changes, create(aSet(name, names[name], "", nil)))
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := api.ChangeResourceRecordSets(rctx, &route53.ChangeResourceRecordSetsInput{
			HostedZoneId: zone, ChangeBatch: &types.ChangeBatch{Changes: changes}},
			func(o *route53.Options) { o.RetryMaxAttempts = 1 })
		cancel()
		h.mu.Lock()
		if err == nil {
			if h.acked == nil {
				h.acked = map[string]string{}
			}
			for name, v := range names {
				h.acked[name] = v
			}
		} else {
			h.failed++
		}
		h.mu.Unlock()
	}
}

// missing returns the acknowledged names member i does not answer with their
// address.
func (h *r53History) missing(f *ctlFleet, i int) []string {
	var out []string
	c := &dns.Client{Timeout: 2 * time.Second}
	for name, want := range h.acked {
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeA)
		r, _, err := c.Exchange(q, f.ms[i].srv.Addr)
		if err != nil || !slices.Contains(answersA(r), want) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
