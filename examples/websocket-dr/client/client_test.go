package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/healthroute/healthroute/examples/websocket-dr/wire"
)

// pipe is an in-memory Conn; the test plays the region on the other end.
type pipe struct {
	toClient, toServer chan []byte
	closed             chan struct{}
	once               sync.Once
}

func newPipe() *pipe {
	return &pipe{toClient: make(chan []byte), toServer: make(chan []byte), closed: make(chan struct{})}
}

func (p *pipe) Read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-p.toClient:
		return b, nil
	case <-p.closed:
		return nil, errors.New("closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipe) Write(ctx context.Context, b []byte) error {
	select {
	case p.toServer <- b:
		return nil
	case <-p.closed:
		return errors.New("closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipe) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// region is a scripted region: reply decides the answer to each message (nil: none).
type region struct {
	name    string
	version uint64
	reply   func(m wire.Message) *wire.Message
}

func (r *region) serve(p *pipe) {
	for {
		var b []byte
		select {
		case b = <-p.toServer:
		case <-p.closed:
			return
		}
		var m wire.Message
		json.Unmarshal(b, &m)
		var out *wire.Message
		switch m.Type {
		case wire.Hello:
			out = &wire.Message{Type: wire.Welcome, User: m.User, Region: r.name, Version: r.version}
		case wire.Write:
			r.version++
			out = &wire.Message{Type: wire.Ack, ID: m.ID, Version: r.version}
		default:
			out = r.reply(m)
		}
		if out == nil {
			continue
		}
		ob, _ := json.Marshal(out)
		select {
		case p.toClient <- ob:
		case <-p.closed:
			return
		}
	}
}

// dial is an Options.Dial that connects to r.
func (r *region) dial(context.Context, string, string) (Conn, error) {
	p := newPipe()
	go r.serve(p)
	return p, nil
}

// run runs c until the returned stop is called; stop returns Run's error.
func run(t *testing.T, c *Client) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

func pong(m wire.Message) *wire.Message { return &wire.Message{Type: wire.Pong, ID: m.ID} }

// recorder collects events; the client calls it from its own goroutine.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func options(rec *recorder, dial func(ctx context.Context, url, host string) (Conn, error)) Options {
	return Options{
		Name: "chat.example.org.", Port: 8443, User: "u1",
		Heartbeat: 30 * time.Second, // the default, on fake time
		Backoff:   Backoff{Base: time.Second, Cap: 8 * time.Second, Attempts: 5, Rand: func(n int64) int64 { return n - 1 }},
		OnEvent:   rec.add,
		Resolve: func(context.Context, string) (netip.Addr, error) {
			return netip.MustParseAddr("192.0.2.1"), nil
		},
		Dial: dial,
	}
}

// TestHeartbeatCadence: with a region that answers, a heartbeat goes out every
// Heartbeat and the connection stays up.
func TestHeartbeatCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			beats []time.Time
		)
		r := &region{name: "primary", reply: func(m wire.Message) *wire.Message {
			mu.Lock()
			beats = append(beats, time.Now())
			mu.Unlock()
			return pong(m)
		}}
		rec := &recorder{}
		start := time.Now()
		stop := run(t, New(options(rec, r.dial)))
		time.Sleep(5*time.Minute + time.Second) // fake time: ten heartbeats
		if err := stop(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(beats) != 10 {
			t.Fatalf("%d heartbeats in 5m, want 10", len(beats))
		}
		for i, b := range beats {
			if want := start.Add(time.Duration(i+1) * 30 * time.Second); !b.Equal(want) {
				t.Errorf("heartbeat %d at %s, want %s", i+1, b.Sub(start), want.Sub(start))
			}
		}
		for _, e := range rec.all() {
			if e.State == Disconnected {
				t.Errorf("disconnected while the region answered: %v", e.Err)
			}
		}
	})
}

// TestHeartbeatClose: two consecutive missing (or invalid) replies close the
// connection, and the client reconnects after a jittered delay.
func TestHeartbeatClose(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reply     func(wire.Message) *wire.Message
		closesAft time.Duration
	}{
		// Heartbeat 1 at 30s, unanswered when heartbeat 2 is due at 60s (miss 1),
		// unanswered when heartbeat 3 is due at 90s (miss 2): closed at 90s.
		{"missing", func(wire.Message) *wire.Message { return nil }, 90 * time.Second},
		// Invalid replies arrive at once: heartbeat 1's at 30s, heartbeat 2's at 60s.
		{"invalid", func(m wire.Message) *wire.Message { return &wire.Message{Type: wire.Pong, ID: m.ID + 100} }, 60 * time.Second},
		{"garbage", func(wire.Message) *wire.Message { return &wire.Message{Type: "nonsense"} }, 60 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &region{name: "primary", reply: tc.reply}
				rec := &recorder{}
				start := time.Now()
				stop := run(t, New(options(rec, r.dial)))
				time.Sleep(tc.closesAft + 2*time.Second) // past the close and the 1s backoff window
				synctest.Wait()
				stop()
				var closed, waiting, reconnected *Event
				ev := rec.all()
				for i := range ev {
					switch e := &ev[i]; {
					case e.State == Disconnected && closed == nil:
						closed = e
					case e.State == Waiting && waiting == nil:
						waiting = e
					case e.State == Connected && closed != nil && reconnected == nil:
						reconnected = e
					}
				}
				if closed == nil || !errors.Is(closed.Err, ErrHeartbeat) {
					t.Fatalf("want a Disconnected event with ErrHeartbeat, got %+v", ev)
				}
				if got := closed.Time.Sub(start); got != tc.closesAft {
					t.Errorf("closed after %s, want %s", got, tc.closesAft)
				}
				if waiting == nil || waiting.Attempt != 1 || waiting.Delay != time.Second-1 {
					t.Errorf("want Waiting attempt 1 for the whole first window (1s-1ns), got %+v", waiting)
				}
				if reconnected == nil || reconnected.Time.Sub(closed.Time) != time.Second-1 {
					t.Errorf("want a reconnect one backoff delay after the close, got %+v", reconnected)
				}
			})
		})
	}
}

// TestBackoffSchedule: while every dial fails, attempts wait min(Cap, Base·2ⁿ)
// (Rand draws the top of each window here) and stop after Attempts with ErrGaveUp.
func TestBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials []time.Time
		rec := &recorder{}
		c := New(options(rec, func(context.Context, string, string) (Conn, error) {
			dials = append(dials, time.Now())
			return nil, errors.New("connection refused")
		}))
		start := time.Now()
		if err := c.Run(t.Context()); !errors.Is(err, ErrGaveUp) {
			t.Fatalf("Run = %v, want ErrGaveUp", err)
		}
		// The first try at once, then 5 retries after 1s, 2s, 4s, 8s, 8s (capped), less
		// 1ns each.
		want := []time.Duration{0, time.Second - 1, 3*time.Second - 2, 7*time.Second - 3, 15*time.Second - 4, 23*time.Second - 5}
		if len(dials) != len(want) {
			t.Fatalf("%d dials, want %d", len(dials), len(want))
		}
		for i, d := range dials {
			if got := d.Sub(start); got != want[i] {
				t.Errorf("dial %d at %s, want %s", i+1, got, want[i])
			}
		}
		ev := rec.all()
		if last := ev[len(ev)-1]; last.State != Failed || last.Attempt != 5 {
			t.Errorf("last event %+v, want Failed after 5 retries", last)
		}
	})
}

// TestResume: a reconnect resumes the session by user ID in whatever region answers,
// reports writes that region does not hold, and continues from its version.
func TestResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary := &region{name: "primary", reply: pong}
		standby := &region{name: "standby", reply: pong, version: 3} // replication lags by 2
		var (
			mu    sync.Mutex
			conns []*pipe
		)
		rec := &recorder{}
		c := New(options(rec, func(context.Context, string, string) (Conn, error) {
			mu.Lock()
			defer mu.Unlock()
			p := newPipe()
			r := primary
			if len(conns) > 0 {
				r = standby
			}
			conns = append(conns, p)
			go r.serve(p)
			return p, nil
		}))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		for i := range 5 {
			if v, err := c.Write(ctx, "x"); err != nil || v != uint64(i+1) {
				t.Fatalf("write %d = %d, %v", i+1, v, err)
			}
		}
		mu.Lock()
		conns[0].Close() // the primary dies
		mu.Unlock()
		// A write racing the drop may fail with ErrDisconnected; the next one waits for
		// the reconnect.
		v, err := c.Write(ctx, "y")
		if errors.Is(err, ErrDisconnected) {
			v, err = c.Write(ctx, "y")
		}
		if err != nil || v != 4 {
			t.Fatalf("write after failover = %d, %v; want version 4 (standby held 3)", v, err)
		}
		cancel()
		<-done
		var got *Event
		for _, e := range rec.all() {
			if e.State == Connected && e.Region == "standby" {
				got = &e
			}
		}
		if got == nil || got.Version != 3 || got.Lost != 2 || got.User != "u1" || got.Addr != "192.0.2.1:8443" {
			t.Fatalf("resume event %+v, want standby version 3 with 2 lost for u1 at 192.0.2.1:8443", got)
		}
	})
}
