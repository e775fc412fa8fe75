package test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
)

// TestReloadAnswersNeverGoBack: while a reload runs, CoreDNS serves the old and
// the new instance on the same sockets at once, so a query lands on either. A
// client asking the same name one query after another must never get the new
// generation's answer and then the old one's again. Each generation k answers
// g.example.org TXT "gK"; 4 clients ask back to back while the instance is
// reloaded (each reload waits until a client saw its generation), and no client
// may see a generation lower than one it has already seen. The generations are
// made by rewriting the Corefile and sending SIGUSR1 (60 reloads), and by Route 53
// API change batches (UPSERT of the record set), each of which reloads the
// instance (30 reloads).
func TestReloadAnswersNeverGoBack(t *testing.T) {
	t.Run("corefile", func(t *testing.T) {
		port := coretest.FreePort(t)
		others := otherServers(t)
		corefile := func(k int) string {
			return others + fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		record g.example.org. simple {
			TXT "g%d"
		}
	}
}
`, port, k)
		}
		s := coretest.Start(t, corefile(0), port, "g.example.org")
		askDuringReloads(t, s, 60, func(k int) { s.Reload(t, corefile(k)) }) // writes the Corefile, then SIGUSR1
	})

	t.Run("route53_api", func(t *testing.T) {
		dir := t.TempDir()
		port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
		api := fmt.Sprintf("127.0.0.1:%d", apiPort)
		s := coretest.Start(t, otherServers(t)+fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		route53_api %s {
			access_keys %s
		}
		controls {
			data_dir %s
		}
	}
}
`, port, api, writeR53Keys(t, dir), filepath.Join(dir, "state")), port, "example.org")
		client := r53Client(api, r53KeyID, r53Secret)
		upsert := func(k int) {
			t.Helper()
			_, err := client.ChangeResourceRecordSets(context.Background(), &route53.ChangeResourceRecordSetsInput{
				HostedZoneId: aws.String(r53api.ZoneID("example.org.")),
				ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionUpsert,
					ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String("g.example.org"), Type: types.RRTypeTxt, TTL: aws.Int64(30),
						ResourceRecords: []types.ResourceRecord{{Value: aws.String(fmt.Sprintf(`"g%d"`, k))}}}}}},
			})
			if err != nil {
				t.Fatalf("ChangeResourceRecordSets g%d: %v", k, err)
			}
		}
		upsert(0)
		s.WaitFor(t, "g.example.org", dns.TypeTXT, 20*time.Second, "the API's record set g0 answered", func(m *dns.Msg) bool {
			return len(m.Answer) == 1 && strings.Contains(m.Answer[0].String(), `"g0"`)
		})
		askDuringReloads(t, s, 30, upsert)
	})
}

// otherServers returns 16 server blocks of other ports for a Corefile. The old
// instance stops its servers one by one, in an order of CoreDNS's choosing, before
// or after the one asked: they widen the moment both instances serve, which is
// otherwise a few microseconds, so that a test without the hand-over sees answers
// go back in every run.
func otherServers(t *testing.T) string {
	var others strings.Builder
	for range 16 {
		fmt.Fprintf(&others, "other.example:%d {\n\tbind 127.0.0.1\n\twhoami\n}\n", coretest.FreePort(t))
	}
	return others.String()
}

// askDuringReloads has 4 clients ask g.example.org TXT of s back to back while
// reload(k), for k from 1 to reloads, makes generation k (each once a client saw
// the one before), and fails the test if a client ever got a generation lower
// than one it got before.
func askDuringReloads(t *testing.T, s *coretest.Server, reloads int, reload func(k int)) {
	t.Helper()
	const clients = 4
	var (
		newest   atomic.Int64 // the newest generation any client has seen
		asked    atomic.Int64 // queries answered
		lost     atomic.Int64 // queries with no answer (a timeout) or not a generation
		mu       sync.Mutex
		backward []string // each step back a client saw: "client C: gA, gB, then gC"
		seen     [clients]atomic.Int64
		wg       sync.WaitGroup
	)
	end := make(chan struct{})
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &dns.Client{Timeout: 2 * time.Second}
			m := new(dns.Msg)
			m.SetQuestion("g.example.org.", dns.TypeTXT)
			before, last := int64(-1), int64(-1)
			deadline := time.Now().Add(2 * time.Minute)
			for range 2_000_000 { // bounded in count, and below in time
				select {
				case <-end:
					return
				default:
				}
				if time.Now().After(deadline) {
					return
				}
				r, _, err := cl.Exchange(m, s.Addr)
				g := int64(-1)
				if err == nil && len(r.Answer) == 1 {
					if txt, ok := r.Answer[0].(*dns.TXT); ok && len(txt.Txt) == 1 && strings.HasPrefix(txt.Txt[0], "g") {
						g, _ = strconv.ParseInt(txt.Txt[0][1:], 10, 64)
					}
				}
				if g < 0 {
					lost.Add(1)
					continue
				}
				asked.Add(1)
				if g < last {
					mu.Lock()
					backward = append(backward, fmt.Sprintf("client %d: g%d, g%d, then g%d", c, before, last, g))
					mu.Unlock()
				}
				if g != last {
					before, last = last, g
				}
				seen[c].Store(max(seen[c].Load(), g))
				for n := newest.Load(); g > n && !newest.CompareAndSwap(n, g); n = newest.Load() {
				}
			}
		}()
	}
	stop := func() {
		select {
		case <-end:
		default:
			close(end)
		}
		wg.Wait()
	}
	t.Cleanup(stop)

	for k := 1; k <= reloads; k++ {
		reload(k)
		coretest.WaitUntil(t, 15*time.Second, fmt.Sprintf("a client saw generation %d", k),
			func() bool { return newest.Load() >= int64(k) },
			func() string { return fmt.Sprintf("newest seen g%d\n%s", newest.Load(), s.Output()) })
	}
	coretest.WaitUntil(t, 15*time.Second, fmt.Sprintf("every client saw generation %d", reloads),
		func() bool {
			for c := range clients {
				if seen[c].Load() < int64(reloads) {
					return false
				}
			}
			return true
		},
		func() string { return "some client never reached the last generation" })
	stop()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d answers to %d clients over %d reloads (%d completed), %d unanswered", asked.Load(), clients, reloads,
		strings.Count(s.Output(), "Reloading complete"), lost.Load())
	if len(backward) > 0 {
		t.Errorf("%d times a client got an older generation after a newer one (want never):\n%s",
			len(backward), strings.Join(backward, "\n"))
	}
}
