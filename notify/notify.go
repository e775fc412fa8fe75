// Package notify delivers status-change events to a webhook: JSON, signed with
// HMAC-SHA256, at least once, in order, through a bounded queue that never blocks
// the caller.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/healthroute/healthroute/internal/ratelog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var log = clog.NewWithPlugin("healthroute")

const (
	// QueueSize bounds the events waiting for delivery; past it the oldest waiting
	// event is dropped (counted and logged), so a receiver that is down or hangs
	// costs memory only up to here, and never a probe or a DNS answer.
	QueueSize = 1024
	// AttemptTimeout bounds one delivery attempt: connect, send, response headers.
	AttemptTimeout = 5 * time.Second
	// FirstBackoff is the wait after a first failed attempt; each further failure
	// doubles it up to MaxBackoff. Attempts go on until one succeeds.
	FirstBackoff = time.Second
	// MaxBackoff is the longest wait between two attempts.
	MaxBackoff = time.Minute
	// SignatureHeader carries "t=UNIX,v1=HEX": HEX is HMAC-SHA256 with the secret
	// over "UNIX." followed by the body.
	SignatureHeader = "X-Healthroute-Signature"
	// logEvery spaces the failure log lines.
	logEvery = time.Minute
)

var (
	events = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "webhook_events_total",
		Help: "Status-change events for the webhook, by result: delivered, or dropped (the queue was full).",
	}, []string{"result"})
	failures = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "webhook_failures_total",
		Help: "Webhook delivery attempts that failed (no answer, or a status other than 2xx); each is retried.",
	})
	queued = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "healthroute", Name: "webhook_queue",
		Help: "Events waiting for delivery to the webhooks.",
	})
)

func init() {
	events.WithLabelValues("delivered")
	events.WithLabelValues("dropped")
}

// Event is one status change, as the webhook receives it (JSON).
type Event struct {
	ID     string    `json:"id"`  // unique per event; a redelivery repeats it
	Seq    uint64    `json:"seq"` // increases by one per event of this webhook, in order
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`             // check or record
	Check  string    `json:"check,omitempty"`  // kind check
	Record string    `json:"record,omitempty"` // kind record: the record group's name, type and policy
	Type   string    `json:"type,omitempty"`
	Policy string    `json:"policy,omitempty"`
	From   string    `json:"from"` // check: healthy or unhealthy; record: healthy or failing_open
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	Zones  []string  `json:"zones"` // the zones of the block that saw it
}

// Notifier delivers events to one webhook URL, one at a time, in the order they
// were sent, each until it is accepted (a 2xx answer).
type Notifier struct {
	url    string
	secret []byte
	client *http.Client
	id     string // this process's prefix of event IDs

	mu       sync.Mutex
	queue    []Event
	inflight bool // queue[0] is being delivered
	seq      uint64
	wake     chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
	logs   ratelog.Limiter // delivery failures and drops: a line a minute of each
}

// New starts a Notifier delivering to url, signing with secret.
func New(url string, secret []byte) *Notifier {
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{url: url, secret: secret, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
		client: &http.Client{Timeout: AttemptTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		id:     strconv.FormatInt(time.Now().UnixNano(), 36),
		logs:   ratelog.Limiter{Window: logEvery, Burst: 1}}
	go n.run(ctx)
	return n
}

// Send queues ev for delivery and returns at once; it fills in ID and Seq. When the
// queue is full the oldest waiting event is dropped.
func (n *Notifier) Send(ev Event) {
	n.mu.Lock()
	n.seq++
	ev.Seq = n.seq
	ev.ID = fmt.Sprintf("%s-%d", n.id, n.seq)
	if len(n.queue) >= QueueSize { // drop the oldest not being delivered
		i := 0
		if n.inflight {
			i = 1
		}
		n.queue = append(n.queue[:i], n.queue[i+1:]...)
		events.WithLabelValues("dropped").Inc()
		queued.Dec()
		if ok, held := n.logs.Allow("drop", time.Now()); ok {
			log.Warningf("webhook %s: %d events dropped since the last such line (at most one a minute): the queue of %d is full", n.url, held.Count+1, QueueSize)
		}
	}
	n.queue = append(n.queue, ev)
	queued.Inc()
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Stop ends delivery: an attempt under way is cancelled, and what is still queued
// is not delivered.
func (n *Notifier) Stop() {
	n.cancel()
	<-n.done
	n.mu.Lock()
	queued.Sub(float64(len(n.queue)))
	n.queue = nil
	n.mu.Unlock()
}

// run delivers the queue's head until it is accepted, then the next.
func (n *Notifier) run(ctx context.Context) {
	defer close(n.done)
	for {
		n.mu.Lock()
		var ev *Event
		if len(n.queue) > 0 {
			head := n.queue[0]
			ev, n.inflight = &head, true
		}
		n.mu.Unlock()
		if ev == nil {
			select {
			case <-ctx.Done():
				return
			case <-n.wake:
				continue
			}
		}
		body, err := json.Marshal(ev)
		if err != nil { // an Event always encodes; drop it rather than retry forever
			n.pop()
			continue
		}
		if !n.deliver(ctx, ev, body) {
			return
		}
		n.pop()
		events.WithLabelValues("delivered").Inc()
	}
}

// pop removes the queue's head.
func (n *Notifier) pop() {
	n.mu.Lock()
	if len(n.queue) > 0 {
		n.queue = n.queue[1:]
		queued.Dec()
	}
	n.inflight = false
	if len(n.queue) == 0 {
		n.queue = nil // let the backing array go
	}
	n.mu.Unlock()
}

// deliver attempts ev until it is accepted, waiting between attempts; it returns
// false when ctx ended first.
func (n *Notifier) deliver(ctx context.Context, ev *Event, body []byte) bool {
	wait := FirstBackoff
	for attempt := 1; ; attempt++ {
		err := n.attempt(ctx, body)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		failures.Inc()
		if ok, held := n.logs.Allow("failure", time.Now()); ok {
			log.Warningf("webhook %s: delivery failed (%d failures since the last such line, at most one a minute): event %s, attempt %d: %v; retrying in %s",
				n.url, held.Count+1, ev.ID, attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, MaxBackoff)
	}
}

// attempt POSTs body once, signed.
func (n *Notifier) attempt(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "healthroute-webhook")
	req.Header.Set(SignatureHeader, "t="+ts+",v1="+Sign(n.secret, ts, body))
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// Sign returns the hex HMAC-SHA256 with secret over "ts." and body: what a receiver
// computes to check SignatureHeader.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
