package healthroute

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// TestAnswerCountsFromEveryCore: answers given on every core at once, to one popular
// name (counted in each core's own slots) and to many names (most counted in the shared
// slice), add up exactly in a scrape, taken while queries still run and after: a scrape
// never reads more than was answered, nor less than it read before.
func TestAnswerCountsFromEveryCore(t *testing.T) {
	block := `healthroute example.org. {
		record hot.example.org. weighted {
			weight 10 A 192.0.2.1 id only
		}
`
	const cold = 200 // more names than a core has slots
	for i := range cold {
		block += "record " + coldName(i) + " weighted {\nweight 10 A 192.0.2.2 id cold\n}\n"
	}
	h := testHandler(t, block+"}")
	server := "dns://127.0.0.1:5307"
	workers := max(4, runtime.GOMAXPROCS(0)*2)
	const perWorker = 300
	given := float64(workers * perWorker)
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: server})
	ask := func(name string) { // seriesAsk's query, from a goroutine of its own
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		if _, err := h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
			t.Error(err)
		}
	}
	hot := map[string]string{"server": server, "record": "hot.example.org.", "member": "only"}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				ask("hot.example.org.")
				n := (w*perWorker + i) % cold
				ask(coldName(n))
			}
		})
	}
	last := 0.0
	for range 5 { // scrapes while the queries run
		got := gatheredCounter(t, "answers_total", hot)
		if got < last || got > given {
			t.Errorf("scrape during queries: %v answers of hot, after %v, at most %d given", got, last, workers*perWorker)
		}
		last = got
	}
	wg.Wait()
	if got := gatheredCounter(t, "answers_total", hot); got != given {
		t.Errorf("hot: %v answers counted, want %d", got, workers*perWorker)
	}
	total := 0.0
	for n := range cold {
		total += gatheredCounter(t, "answers_total", map[string]string{"server": server,
			"record": coldName(n)})
	}
	if total != given {
		t.Errorf("spread over %d names: %v answers counted, want %d", cold, total, workers*perWorker)
	}
}

// coldName is the name of the test's n-th less asked record.
func coldName(n int) string { return fmt.Sprintf("c%03d.example.org.", n) }
