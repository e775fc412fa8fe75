package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestQueueFullDropsOldestWaiting: with the receiver holding the first delivery,
// QueueSize+5 events overflow the queue (which holds the one in delivery) by 5: the
// 5 oldest waiting, not the one being delivered, are dropped and counted; once the
// receiver answers, the rest arrive in order, and Send never waited.
func TestQueueFullDropsOldestWaiting(t *testing.T) {
	hold := make(chan struct{})
	var mu sync.Mutex
	var seqs []uint64
	first, all := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Errorf("body %q: %v", b, err)
		}
		once.Do(func() { close(first); <-hold })
		mu.Lock()
		seqs = append(seqs, ev.Seq)
		if len(seqs) == QueueSize {
			close(all)
		}
		mu.Unlock()
	}))
	defer srv.Close()
	n := New(srv.URL, []byte("0123456789abcdef"))
	defer n.Stop()
	dropped := testutil.ToFloat64(events.WithLabelValues("dropped"))
	n.Send(Event{Kind: "check", Check: "c"})
	<-first // the first event is being delivered
	for range QueueSize + 4 {
		n.Send(Event{Kind: "check", Check: "c"})
	}
	if d := testutil.ToFloat64(events.WithLabelValues("dropped")) - dropped; d != 5 {
		t.Errorf("%v events dropped, want 5: the queue holds %d, the one in delivery among them", d, QueueSize)
	}
	close(hold)
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		got := len(seqs)
		mu.Unlock()
		t.Fatalf("%d events delivered within 30s, want %d", got, QueueSize)
	}
	mu.Lock()
	defer mu.Unlock()
	if seqs[0] != 1 || seqs[1] != 7 {
		t.Errorf("delivered seqs start %v, want 1 then 7 (2-6 dropped)", seqs[:2])
	}
	for i := 2; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("delivered out of order at %d: %d after %d", i, seqs[i], seqs[i-1])
		}
	}
}
