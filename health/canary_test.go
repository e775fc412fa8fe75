package health

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebSocketCanaryFailover runs the real scheduler against a real WebSocket
// heartbeat endpoint, kills the endpoint, and expects the check down within two
// intervals plus a probe budget (the disaster-recovery pattern: with interval 1s
// and failure_threshold 2, about 2 seconds; here scaled to 100ms).
func TestWebSocketCanaryFailover(t *testing.T) {
	srv, _ := wsServer(t, false, func(c *websocket.Conn, r *http.Request) {
		for range 100 {
			_, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if string(msg) == "ping" {
				c.Write(r.Context(), websocket.MessageText, []byte("pong"))
			}
		}
	})
	const interval = 100 * time.Millisecond
	spec := &Spec{Name: "ws-primary", Type: WebSocket, Target: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws",
		Send: "ping", Expect: "pong", Interval: interval, Fails: 2, Passes: 2}
	spec.Seal()
	fp := spec.Fingerprint()

	snaps := make(chan *Snapshot, 64)
	s := &Scheduler{Jitter: func(time.Duration) time.Duration { return 0 }}
	cancel := s.Subscribe(func(snap *Snapshot) {
		select {
		case snaps <- snap:
		default: // the test reads the latest through s.Snapshot as well
		}
	})
	defer cancel()
	s.Acquire([]*Spec{spec})
	s.Start(context.Background())
	defer s.Stop()

	// waitFor returns when a published snapshot satisfies ok, or fails at the deadline.
	waitFor := func(what string, within time.Duration, ok func(Status) bool) time.Duration {
		t.Helper()
		start := time.Now()
		deadline := time.NewTimer(within)
		defer deadline.Stop()
		for {
			if ok(s.Snapshot().Status(fp)) {
				return time.Since(start)
			}
			select {
			case <-snaps:
			case <-deadline.C:
				in, _ := s.Info(fp)
				t.Fatalf("%s: not within %s (last error %q)", what, within, in.LastErr)
			}
		}
	}
	waitFor("first result", 2*time.Second, func(st Status) bool { return st.Seen && !st.Down })
	srv.CloseClientConnections()
	srv.Close()
	took := waitFor("primary seen down", 3*time.Second, func(st Status) bool { return st.Down })
	// The slack is for scheduling on a loaded machine (two timers, a publication,
	// this goroutine's wake-up under -race), which the 100 ms scale leaves no room for.
	if limit := 2*interval + budget(spec) + time.Second; took > limit {
		t.Errorf("dead primary seen after %s; want at most %s", took, limit)
	}
	if in, _ := s.Info(fp); in.LastErr == "" || in.LastChange.IsZero() {
		t.Errorf("Info after failover: %+v; want the last error and change time", in)
	}
}
