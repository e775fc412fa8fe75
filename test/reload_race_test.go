package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// TestReloadsAtTheSameInstant races every way a reload starts: the route53 export
// is rewritten every 100 ms (the watcher reloads) while every 300 ms the Corefile
// changes and SIGUSR1 is sent twice in a row, so that reloads are asked for while
// others run. Reloads run one at a time, a refused one runs after the running one
// from the Corefile on disk, and at the end the last Corefile and the last export
// are both answered within 3 s; /v1/records lists one generation of each record,
// explain answers what DNS answers, and nothing is left behind.
func TestReloadsAtTheSameInstant(t *testing.T) {
	dir := t.TempDir()
	records := filepath.Join(dir, "zone.json")
	writeExport := func(v int) { writeRoute53Version(t, records, v) }
	writeExport(0)
	port, metricsPort, apiPort := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	corefile := func(k int) string {
		return fmt.Sprintf(`example.com:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		api 127.0.0.1:%d
		route53 {
			records %s
		}
		record k.example.com. simple {
			TXT "k%d"
		}
	}
}
`, port, metricsPort, apiPort, records, k)
	}
	s := coretest.Start(t, corefile(0), port, "www.example.com")
	txtIs := func(want string) func(*dns.Msg) bool {
		return func(m *dns.Msg) bool {
			return len(m.Answer) == 1 && strings.Contains(m.Answer[0].String(), `"`+want+`"`)
		}
	}
	s.WaitFor(t, "k.example.com.", dns.TypeTXT, 2*time.Second, "k0", txtIs("k0"))
	g0, f0 := reloadLeftovers(t, s, metrics)

	// Queries all along, at about 1,000 a second: none may go unanswered.
	load := startQueryLoad(t, s.Addr, "www.example.com.", 1000)
	v, k := 0, 0
	exports, edits := time.NewTicker(100*time.Millisecond), time.NewTicker(300*time.Millisecond)
	end := time.After(8 * time.Second)
racing:
	for range 1000 { // bounded; end stops it after 8 s
		select {
		case <-exports.C:
			v++
			writeExport(v)
		case <-edits.C:
			k++
			s.Reload(t, corefile(k)) // writes the Corefile, then SIGUSR1
			if err := s.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
		case <-end:
			break racing
		}
	}
	exports.Stop()
	edits.Stop()
	if sent, lost := load.stop(); lost > 0 || sent < 1000 {
		t.Errorf("%d of %d queries sent during the reloads got no answer (want every one answered, at least 1,000 sent)", lost, sent)
	} else {
		t.Logf("%d queries during the reloads, every one answered", sent)
	}
	last := time.Now()
	s.WaitFor(t, "k.example.com.", dns.TypeTXT, 3*time.Second, fmt.Sprintf("the last Corefile, k%d", k), txtIs(fmt.Sprintf("k%d", k)))
	s.WaitFor(t, "www.example.com.", dns.TypeTXT, 3*time.Second, fmt.Sprintf("the last export, v%d", v), txtIs(fmt.Sprintf("v%d", v)))
	t.Logf("k%d and v%d answered %s after the last writes; %d reloads completed, %d refused while another ran",
		k, v, time.Since(last).Round(time.Millisecond), strings.Count(s.Output(), "Reloading complete"),
		strings.Count(s.Output(), "a reload is running"))
	if out := s.Output(); strings.Contains(out, "use of closed network connection") {
		t.Errorf("a reload went through a closed instance:\n%s", out)
	}

	// Before the API is asked: its keep-alive connection would count.
	var g, f int
	coretest.WaitUntil(t, 10*time.Second, "goroutines and descriptors back to their level before the reloads",
		func() bool { g, f = reloadLeftovers(t, s, metrics); return g <= g0 && f <= f0 },
		func() string {
			return fmt.Sprintf("goroutines %d (before %d), descriptors %d (before %d)", g, g0, f, f0)
		})

	// The API shows the blocks that answer: one generation of each record, and explain
	// gives DNS's answer.
	var recs struct{ Records []view.Record }
	getJSON(t, api+"/v1/records", &recs)
	var names []string
	for _, r := range recs.Records {
		for _, m := range r.Members {
			names = append(names, r.Name+" "+m.Target)
		}
	}
	if len(names) != 2 || !strings.Contains(strings.Join(names, "|"), fmt.Sprintf(`"k%d"`, k)) || !strings.Contains(strings.Join(names, "|"), fmt.Sprintf(`"v%d"`, v)) {
		t.Errorf("/v1/records lists %q; want k%d and v%d, one generation each", names, k, v)
	}
	for _, q := range []struct{ name, want string }{{"k.example.com.", fmt.Sprintf("k%d", k)}, {"www.example.com.", fmt.Sprintf("v%d", v)}} {
		var ex view.Explanation
		getJSON(t, api+"/v1/explain?type=TXT&name="+q.name, &ex)
		if len(ex.Answer) != 1 || !strings.Contains(ex.Answer[0], `"`+q.want+`"`) {
			t.Errorf("explain %s answers %q; DNS answers %s", q.name, ex.Answer, q.want)
		}
	}
}

// queryLoad sends queries at a steady rate from 4 goroutines and counts those that got
// no answer within 2 s.
type queryLoad struct {
	end        chan struct{}
	wg         sync.WaitGroup
	sent, lost atomic.Int64
}

func startQueryLoad(t *testing.T, addr, name string, perSecond int) *queryLoad {
	l := &queryLoad{end: make(chan struct{})}
	const workers = 4
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := &dns.Client{Timeout: 2 * time.Second}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeTXT)
			tick := time.NewTicker(time.Second * workers / time.Duration(perSecond))
			defer tick.Stop()
			for range 10 * 60 * perSecond { // bounded: ten minutes' worth
				select {
				case <-l.end:
					return
				case <-tick.C:
				}
				l.sent.Add(1)
				if r, _, err := c.Exchange(m, addr); err != nil || r.Rcode != dns.RcodeSuccess {
					l.lost.Add(1)
				}
			}
		}()
	}
	t.Cleanup(func() { l.stop() })
	return l
}

// stop ends the load (once) and returns how many queries were sent and lost.
func (l *queryLoad) stop() (sent, lost int64) {
	select {
	case <-l.end:
	default:
		close(l.end)
	}
	l.wg.Wait()
	return l.sent.Load(), l.lost.Load()
}
