// Command canary is the first link of the alarm-style variant (Corefile.prometheus):
// it sends a WebSocket heartbeat to a region every interval, as the client library
// does, and exports the run of consecutive failures for Prometheus to scrape:
//
//	canary_consecutive_failures{region="primary"} 0
//
// Prometheus turns it into the alarm that healthroute's prometheus check evaluates.
//
//	go run ./examples/websocket-dr/cmd/canary -target ws://127.0.0.1:18443/ws -region primary
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/healthroute/healthroute/examples/websocket-dr/wire"
)

func main() {
	target := flag.String("target", "ws://127.0.0.1:18443/ws", "region to heartbeat")
	regionName := flag.String("region", "primary", "region label of the metric")
	listen := flag.String("listen", "127.0.0.1:19100", "address of /metrics")
	every := flag.Duration("interval", time.Second, "between heartbeats")
	timeout := flag.Duration("timeout", time.Second, "per heartbeat")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var fails, total atomic.Int64
	http.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP canary_consecutive_failures Heartbeats in a row that got no valid pong.\n"+
			"# TYPE canary_consecutive_failures gauge\ncanary_consecutive_failures{region=%q} %d\n"+
			"# HELP canary_heartbeats_total Heartbeats sent.\n# TYPE canary_heartbeats_total counter\n"+
			"canary_heartbeats_total{region=%q} %d\n", *regionName, fails.Load(), *regionName, total.Load())
	})
	srv := &http.Server{Addr: *listen, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	t := time.NewTicker(*every)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, *timeout)
		err := beat(pctx, *target)
		cancel()
		total.Add(1)
		if err != nil {
			n := fails.Add(1)
			log.Printf("heartbeat %s: %v (%d in a row)", *target, err, n)
		} else if fails.Swap(0) > 0 {
			log.Printf("heartbeat %s: answered again", *target)
		}
		select {
		case <-ctx.Done():
			srv.Close()
			return
		case <-t.C:
		}
	}
}

// beat sends one heartbeat on a new connection and waits for its pong.
func beat(ctx context.Context, target string) error {
	c, _, err := websocket.Dial(ctx, target, nil)
	if err != nil {
		return err
	}
	defer c.CloseNow()
	b, _ := json.Marshal(wire.Message{Type: wire.Heartbeat, ID: 1})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		return err
	}
	_, b, err = c.Read(ctx)
	if err != nil {
		return err
	}
	var m wire.Message
	if err := json.Unmarshal(b, &m); err != nil || m.Type != wire.Pong || m.ID != 1 {
		return fmt.Errorf("invalid reply %.80q", b)
	}
	c.Close(websocket.StatusNormalClosure, "")
	return nil
}
