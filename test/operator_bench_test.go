package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// BenchmarkOperatorStatusPageDNS measures the DNS throughput of the real binary with
// 10,000 checks alone and while 8 clients fetch its status page back to back (no
// If-None-Match: the costliest clients), in alternating rounds, and reports the
// median of the rounds' ratios (1 = the page costs DNS nothing), the median rates
// and the pages served; and, measured apart, the cores the server uses serving the
// page's clients without DNS load. The DNS clients and the page's clients run in this process,
// on the same cores as the server, so part of the loss is the clients' own work:
//
//	go test -run '^$' -bench OperatorStatusPageDNS -benchtime 1x ./test/
func BenchmarkOperatorStatusPageDNS(b *testing.B) {
	port, apiPort := coretest.FreePort(b), coretest.FreePort(b)
	token := filepath.Join(b.TempDir(), "api.token")
	if err := os.WriteFile(token, []byte(apiToken+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	srv := coretest.Start(b, operatorManyChecks(port, apiPort, 10_000, token), port, "n00000.example.org")
	page := fmt.Sprintf("http://127.0.0.1:%d/", apiPort)

	const (
		rounds     = 6
		window     = 1500 * time.Millisecond
		dnsClients = 8
		refreshers = 8
	)
	// qps sends queries for names spread over the 10,000 records from dnsClients
	// connections, each waiting for its answer, for window.
	qps := func() float64 {
		var n atomic.Int64
		var wg sync.WaitGroup
		end := time.Now().Add(window)
		for w := range dnsClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &dns.Client{Timeout: time.Second}
				conn, err := c.Dial(srv.Addr)
				if err != nil {
					b.Error(err)
					return
				}
				defer conn.Close()
				m := new(dns.Msg)
				for i := w; time.Now().Before(end); i += dnsClients {
					m.SetQuestion(fmt.Sprintf("n%05d.example.org.", i%10_000), dns.TypeA)
					if r, _, err := c.ExchangeWithConn(m, conn); err == nil && len(r.Answer) == 1 {
						n.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		return float64(n.Load()) / window.Seconds()
	}
	// refresh fetches the page from refreshers clients until stop is closed.
	var pages atomic.Int64
	refresh := func(stop chan struct{}) *sync.WaitGroup {
		var wg sync.WaitGroup
		for range refreshers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 10 * time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := client.Get(page)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						pages.Add(1)
					}
				}
			}()
		}
		return &wg
	}

	cpu := func() time.Duration { return coretest.CPU(b, srv.Cmd.Process.Pid) }

	var alone, loaded, ratios []float64
	// The page's clients alone: the server's CPU for them, without DNS load to blur it.
	c0, t0 := cpu(), time.Now()
	stop := make(chan struct{})
	wg := refresh(stop)
	time.Sleep(3 * time.Second) // the window measured
	close(stop)
	wg.Wait()
	pageCPU := float64(cpu()-c0) / float64(time.Since(t0))
	pages.Store(0)
	b.ResetTimer()
	for range b.N {
		for range rounds {
			a := qps()
			stop := make(chan struct{})
			wg := refresh(stop)
			l := qps()
			close(stop)
			wg.Wait()
			alone, loaded, ratios = append(alone, a), append(loaded, l), append(ratios, l/a)
		}
	}
	median := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(median(alone), "dns-qps-alone")
	b.ReportMetric(median(loaded), "dns-qps-with-page")
	b.ReportMetric(median(ratios), "qps-ratio") // of each round's pair: drift between rounds cancels
	b.ReportMetric(float64(pages.Load())/(float64(len(ratios))*window.Seconds()), "pages/s")
	b.ReportMetric(pageCPU, "server-cores-for-page") // cores the server used for the page's clients alone
}
