package region

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/healthroute/healthroute/examples/websocket-dr/wire"
)

// pair returns two regions that name each other as peers, served on loopback.
func pair(t *testing.T) (a, b *Server) {
	t.Helper()
	a, b = New(Config{Name: "primary"}), New(Config{Name: "standby"})
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	t.Cleanup(sa.Close)
	t.Cleanup(sb.Close)
	a.cfg.Peer, b.cfg.Peer = sb.URL, sa.URL
	return a, b
}

// TestReplicationIsAsynchronous: a write is acknowledged before it reaches the peer;
// it reaches it with the next flush; a flush that fails keeps it queued.
func TestReplicationIsAsynchronous(t *testing.T) {
	a, b := pair(t)
	ctx := t.Context()
	for range 3 {
		a.write("u1", "x")
	}
	if _, ok := b.Session("u1"); ok {
		t.Fatal("the standby holds u1 before any flush: replication is not asynchronous")
	}
	a.flush(ctx)
	if v, _ := b.Session("u1"); v.Version != 3 || len(v.Log) != 3 {
		t.Fatalf("after a flush the standby holds %+v, want version 3", v)
	}
	// The write after the last flush is what a crash now would lose.
	a.write("u1", "y")
	if v, _ := b.Session("u1"); v.Version != 3 {
		t.Fatalf("standby version %d, want 3 until the next flush", v.Version)
	}
	// The standby applies; it does not echo the session back.
	if len(b.dirty) != 0 {
		t.Errorf("the standby queued %d replicated sessions, want none (no echo)", len(b.dirty))
	}
	// Peer away: the flush fails and the session stays queued, once.
	a.cfg.Peer = "http://127.0.0.1:1"
	a.flush(ctx)
	a.write("u1", "z")
	if len(a.dirty) != 1 {
		t.Fatalf("queue holds %d users after a failed flush, want 1", len(a.dirty))
	}
}

// TestHigherVersionWins: sessions merge by version, so a stale flush never rolls a
// session back.
func TestHigherVersionWins(t *testing.T) {
	s := New(Config{Name: "standby"})
	s.apply([]wire.Session{{User: "u1", Version: 5, Log: []string{"e"}}})
	s.apply([]wire.Session{{User: "u1", Version: 4, Log: []string{"d"}}})
	if v, _ := s.Session("u1"); v.Version != 5 {
		t.Errorf("version %d after a stale update, want 5", v.Version)
	}
}

// TestBootstrap: a region that comes back copies every session from its peer.
func TestBootstrap(t *testing.T) {
	a, b := pair(t)
	b.write("u1", "x")
	b.write("u2", "y")
	n, err := a.Bootstrap(t.Context())
	if err != nil || n != 2 {
		t.Fatalf("Bootstrap = %d, %v; want 2 sessions", n, err)
	}
	if v, ok := a.Session("u2"); !ok || v.Log[0] != "y" {
		t.Errorf("u2 after bootstrap: %+v", v)
	}
}

func TestLogBounded(t *testing.T) {
	s := New(Config{Name: "primary", LogSize: 3})
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		s.write("u1", v)
	}
	if v, _ := s.Session("u1"); v.Version != 5 || len(v.Log) != 3 || v.Log[0] != "c" {
		t.Errorf("session %+v, want version 5 with log [c d e]", v)
	}
}

// TestWebSocket: the protocol over a real socket, including the health check's
// exchange (a heartbeat with no hello, answered by a pong) and the session being the
// user's, not the connection's.
func TestWebSocket(t *testing.T) {
	s := New(Config{Name: "primary"})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):]+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	ask := func(c *websocket.Conn, m string) wire.Message {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out wire.Message
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		return out
	}
	c := dial()
	if m := ask(c, `{"type":"heartbeat"}`); m.Type != wire.Pong || m.Region != "primary" {
		t.Errorf("health check heartbeat answered %+v, want a pong", m)
	}
	if m := ask(c, `{"type":"write","id":1,"value":"x"}`); m.Type != wire.Error {
		t.Errorf("write before hello answered %+v, want an error", m)
	}
	if m := ask(c, `{"type":"hello","user":"u1"}`); m.Type != wire.Welcome || m.Version != 0 {
		t.Errorf("hello answered %+v, want welcome at version 0", m)
	}
	if m := ask(c, `{"type":"write","id":2,"value":"x"}`); m.Type != wire.Ack || m.ID != 2 || m.Version != 1 {
		t.Errorf("write answered %+v, want ack 2 at version 1", m)
	}
	if m := ask(c, `not json`); m.Type != wire.Error {
		t.Errorf("garbage answered %+v, want an error", m)
	}
	c.CloseNow()
	if m := ask(dial(), `{"type":"hello","user":"u1"}`); m.Version != 1 || len(m.Log) != 1 || m.Log[0] != "x" {
		t.Errorf("a new connection for u1 resumed %+v, want version 1 with [x]", m)
	}
}
