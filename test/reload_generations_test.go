package test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestReloadAnswersNeverGoBack: while a reload runs, CoreDNS serves the old and
// the new instance on the same sockets at once, so a query lands on either. A
// client asking the same name one query after another must never get the new
// generation's answer and then the old one's again. Each Corefile generation k
// answers g.example.org TXT "gK"; 4 clients ask back to back while the Corefile
// is reloaded 60 times (each reload waits until a client saw its generation), and
// no client may see a generation lower than one it has already seen.
func TestReloadAnswersNeverGoBack(t *testing.T) {
	port := coretest.FreePort(t)
	// Other servers, which the old instance stops one by one, in an order of
	// caddy's choosing, before or after the one asked: they widen the moment both
	// instances serve, which is otherwise a few microseconds.
	var others strings.Builder
	for range 16 {
		fmt.Fprintf(&others, "other.example:%d {\n\tbind 127.0.0.1\n\twhoami\n}\n", coretest.FreePort(t))
	}
	corefile := func(k int) string {
		return others.String() + fmt.Sprintf(`example.org:%d {
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

	const clients, reloads = 4, 60
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
		s.Reload(t, corefile(k)) // writes the Corefile, then SIGUSR1
		coretest.WaitUntil(t, 15*time.Second, fmt.Sprintf("a client saw generation %d", k),
			func() bool { return newest.Load() >= int64(k) },
			func() string { return fmt.Sprintf("newest seen g%d\n%s", newest.Load(), s.Output()) })
	}
	coretest.WaitUntil(t, 15*time.Second, fmt.Sprintf("every client saw generation %d", reloads),
		func() bool {
			for c := range clients {
				if seen[c].Load() < reloads {
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
