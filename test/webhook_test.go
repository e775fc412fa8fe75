package test

import (
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/notify"
)

const webhookSecret = "webhook-secret-0123456789abcdef"

// webhookRequest is one delivery attempt a receiver saw.
type webhookRequest struct {
	event  notify.Event
	signed bool // the signature is valid for the body
	status int
}

// webhookReceiver is a loopback HTTP receiver that answers with respond(n) for
// its n-th request (from 1) and records each.
type webhookReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	seen []webhookRequest
}

func newWebhookReceiver(t *testing.T, respond func(n int, r *http.Request) int) *webhookReceiver {
	wr := &webhookReceiver{}
	wr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := webhookRequest{signed: validSignature(r.Header.Get(notify.SignatureHeader), body)}
		if err := json.Unmarshal(body, &req.event); err != nil {
			t.Errorf("webhook body %q: %v", body, err)
		}
		wr.mu.Lock()
		n := len(wr.seen) + 1
		wr.seen = append(wr.seen, req)
		wr.mu.Unlock()
		code := respond(n, r)
		wr.mu.Lock()
		wr.seen[n-1].status = code
		wr.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(wr.Close)
	return wr
}

func (wr *webhookReceiver) requests() []webhookRequest {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return slices.Clone(wr.seen)
}

// validSignature checks "t=UNIX,v1=HEX" against the body, as a receiver would.
func validSignature(header string, body []byte) bool {
	ts, sig, ok := strings.Cut(header, ",v1=")
	if !ok || !strings.HasPrefix(ts, "t=") {
		return false
	}
	want := notify.Sign([]byte(webhookSecret), strings.TrimPrefix(ts, "t="), body)
	return hmac.Equal([]byte(sig), []byte(want))
}

// webhookCorefile is a block with check web on url, a failover record with a
// secondary and a weighted record with web's member alone, and a webhook to hook.
func webhookCorefile(t *testing.T, port, mport int, url, hook string) string {
	secret := writeToken(t, t.TempDir(), webhookSecret)
	return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		webhook %s {
			secret_file %s
		}
		%s
		record www.example.org. failover {
			primary   A 192.0.2.10 check web id east
			secondary A 198.51.100.10 id west
		}
		record solo.example.org. weighted {
			weight 10 A 192.0.2.20 check web id solo-a
		}
	}
}
`, port, mport, hook, secret, fastCheck("web", url))
}

// flipAndWait fails (or heals) web and waits until www's answer follows; it
// returns how long that took.
func flipAndWait(t *testing.T, srv *coretest.Server, web *flipServer, up bool) time.Duration {
	t.Helper()
	web.ok.Store(up)
	want := "198.51.100.10"
	if up {
		want = "192.0.2.10"
	}
	start := time.Now()
	srv.WaitFor(t, "www.example.org", dns.TypeA, 5*time.Second, "www answers "+want, func(m *dns.Msg) bool { return firstA(m) == want })
	return time.Since(start)
}

// TestWebhookRetriesInOrderSigned: a receiver that fails the first 3 deliveries and
// then accepts gets every event of 3 failures and recoveries of a check (the check's
// and its lone record group's), in order, each signed, the first redelivered until
// accepted, at the default backoff (1 s, 2 s, 4 s).
func TestWebhookRetriesInOrderSigned(t *testing.T) {
	web := newFlipServer(t, false)
	recv := newWebhookReceiver(t, func(n int, _ *http.Request) int {
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	port, mport := coretest.FreePort(t), coretest.FreePort(t)
	srv := coretest.Start(t, webhookCorefile(t, port, mport, web.URL+"/", recv.URL+"/hook"), port, "www.example.org")
	srv.WaitFor(t, "www.example.org", dns.TypeA, 5*time.Second, "www answers the primary", func(m *dns.Msg) bool { return firstA(m) == "192.0.2.10" })
	for range 3 {
		flipAndWait(t, srv, web, false)
		flipAndWait(t, srv, web, true)
	}
	const events = 12 // 6 changes of web, 6 of solo.example.org. A
	accepted := func() []notify.Event {
		var out []notify.Event
		for _, r := range recv.requests() {
			if r.status/100 == 2 {
				out = append(out, r.event)
			}
		}
		return out
	}
	waitUntil(t, 60*time.Second, fmt.Sprintf("%d events accepted", events), func() bool { return len(accepted()) >= events },
		func() string { return fmt.Sprintf("%+v\n%s", recv.requests(), srv.Output()) })
	reqs := recv.requests()
	for i, r := range reqs {
		if !r.signed {
			t.Errorf("request %d (event %s) has no valid signature", i+1, r.event.ID)
		}
		if i < 4 && r.event.ID != reqs[0].event.ID {
			t.Errorf("request %d carries event %s; want the first event redelivered until accepted", i+1, r.event.ID)
		}
	}
	got := accepted()
	if len(got) != events {
		t.Fatalf("%d events accepted, want %d: %+v", len(got), events, got)
	}
	var checkTo, recordTo []string
	for i, ev := range got {
		if ev.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d: out of order or lost", i+1, ev.Seq)
		}
		switch ev.Kind {
		case "check":
			if ev.Check != "web" || ev.Reason == "" {
				t.Errorf("check event %+v, want check web with a reason", ev)
			}
			checkTo = append(checkTo, ev.To)
		case "record":
			if ev.Record != "solo.example.org." || ev.Type != "A" || ev.Policy != "weighted" {
				t.Errorf("record event %+v, want solo.example.org. A weighted", ev)
			}
			recordTo = append(recordTo, ev.To)
		}
	}
	if want := "unhealthy healthy unhealthy healthy unhealthy healthy"; strings.Join(checkTo, " ") != want {
		t.Errorf("check web went to %v, want %s", checkTo, want)
	}
	if want := "failing_open healthy failing_open healthy failing_open healthy"; strings.Join(recordTo, " ") != want {
		t.Errorf("solo.example.org. went to %v, want %s", recordTo, want)
	}
	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	probingWaitMetrics(t, murl, 5*time.Second, "webhook_failures_total 3, webhook_events_total{delivered} 12", func(f map[string]*dto.MetricFamily) bool {
		return probingMetric(f, "webhook_failures_total") == 3 && probingMetric(f, "webhook_events_total", "result", "delivered") == events
	})
}

// TestWebhookHungReceiverDelaysNothing: a receiver that accepts connections and
// never answers holds the webhook's delivery (each attempt until its 5 s timeout)
// while the check flips 10 times: every flip still reaches DNS answers as quickly
// as probes allow, and queries are answered at once. The figures are logged.
func TestWebhookHungReceiverDelaysNothing(t *testing.T) {
	web := newFlipServer(t, false)
	release := make(chan struct{})
	recv := newWebhookReceiver(t, func(int, *http.Request) int { <-release; return http.StatusOK })
	defer close(release) // before recv.Close (cleanup) waits for its handlers
	port, mport := coretest.FreePort(t), coretest.FreePort(t)
	srv := coretest.Start(t, webhookCorefile(t, port, mport, web.URL+"/", recv.URL+"/hook"), port, "www.example.org")
	srv.WaitFor(t, "www.example.org", dns.TypeA, 5*time.Second, "www answers the primary", func(m *dns.Msg) bool { return firstA(m) == "192.0.2.10" })
	var worstFlip time.Duration
	for i := range 10 {
		worstFlip = max(worstFlip, flipAndWait(t, srv, web, i%2 == 1))
	}
	waitUntil(t, 10*time.Second, "the receiver holding a delivery", func() bool { return len(recv.requests()) >= 1 }, srv.Output)
	var worstQuery time.Duration
	for range 200 {
		start := time.Now()
		srv.Query(t, "www.example.org", dns.TypeA)
		worstQuery = max(worstQuery, time.Since(start))
	}
	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	f, _ := scrape(t, murl)
	queue := metricValue(f, metricPrefix+"webhook_queue", nil)
	if queue < 10 {
		t.Errorf("webhook_queue = %v with a hung receiver after 10 changes of a check and its record, want the events waiting", queue)
	}
	t.Logf("with the receiver hung: slowest flip reflected in DNS after %v (probes every 100ms), slowest of 200 queries %v, %v events queued",
		worstFlip.Round(time.Millisecond), worstQuery.Round(time.Microsecond), queue)
}
