// Package region is the example's regional WebSocket service. It answers heartbeats,
// keeps each user's session keyed by user ID, and replicates sessions to the other
// region asynchronously: writes are acknowledged at once and queued, and the queue is
// flushed to the peer every ReplicateEvery. A crash loses the writes acknowledged
// since the last flush that reached the peer: at most ReplicateEvery plus one flush's
// round trip of writes.
package region

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/healthroute/healthroute/examples/websocket-dr/wire"
)

// Config configures a Server.
type Config struct {
	Name           string        // region name, sent in every welcome and pong
	Peer           string        // base URL of the other region ("http://127.0.0.2:8443"); "" replicates nowhere
	ReplicateEvery time.Duration // flush interval of the replication queue; default 500ms
	LogSize        int           // writes kept per session; default 16
	Logf           func(format string, args ...any)
	Now            func() time.Time
}

// Server is one region. Its zero value is not usable; call New.
type Server struct {
	cfg  Config
	http *http.Client
	mux  *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*wire.Session
	dirty    map[string]struct{} // users written here since the last flush
	peerDown bool                // the last flush failed (logged once per outage)
}

// New returns a Server for cfg, filling in defaults.
func New(cfg Config) *Server {
	if cfg.ReplicateEvery <= 0 {
		cfg.ReplicateEvery = 500 * time.Millisecond
	}
	if cfg.LogSize <= 0 {
		cfg.LogSize = 16
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, http: &http.Client{Timeout: 2 * time.Second},
		sessions: map[string]*wire.Session{}, dirty: map[string]struct{}{}}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /ws", s.serveWS)
	s.mux.HandleFunc("POST /replicate", s.serveReplicate)
	s.mux.HandleFunc("GET /snapshot", s.serveSnapshot)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "OK "+cfg.Name+"\n") })
	return s
}

// ServeHTTP serves /ws (clients and health checks), /replicate and /snapshot (the
// peer region) and /healthz.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Session returns a copy of user's session and whether this region holds one.
func (s *Server) Session(user string) (wire.Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.sessions[user]
	if !ok {
		return wire.Session{User: user}, false
	}
	return clone(v), true
}

func clone(v *wire.Session) wire.Session {
	c := *v
	c.Log = slices.Clone(v.Log)
	return c
}

func (s *Server) write(user, value string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.sessions[user]
	if !ok {
		v = &wire.Session{User: user}
		s.sessions[user] = v
	}
	v.Version++
	v.Log = append(v.Log, value)
	if n := len(v.Log) - s.cfg.LogSize; n > 0 {
		v.Log = slices.Delete(v.Log, 0, n)
	}
	v.Updated = s.cfg.Now()
	s.dirty[user] = struct{}{}
	return v.Version
}

// apply merges sessions from the peer: the higher version wins. Merged sessions are
// not queued again, so replication never echoes.
func (s *Server) apply(in []wire.Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range in {
		if v, ok := s.sessions[in[i].User]; ok && v.Version >= in[i].Version {
			continue
		}
		c := clone(&in[i])
		s.sessions[c.User] = &c
	}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	// Origin checks protect browsers' cookies; this example's clients are programs.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := r.Context()
	user := "" // set by hello; the session is the user's, not this connection's
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m wire.Message
		if err := json.Unmarshal(b, &m); err != nil {
			m = wire.Message{Type: "invalid"}
		}
		var out wire.Message
		switch m.Type {
		case wire.Heartbeat:
			out = wire.Message{Type: wire.Pong, ID: m.ID, Region: s.cfg.Name}
		case wire.Hello:
			if m.User == "" {
				out = wire.Message{Type: wire.Error, ID: m.ID, Error: "hello needs a user"}
				break
			}
			user = m.User
			v, _ := s.Session(user)
			out = wire.Message{Type: wire.Welcome, User: user, Region: s.cfg.Name, Version: v.Version, Log: v.Log}
		case wire.Write:
			if user == "" {
				out = wire.Message{Type: wire.Error, ID: m.ID, Error: "write before hello"}
				break
			}
			out = wire.Message{Type: wire.Ack, ID: m.ID, Version: s.write(user, m.Value)}
		default:
			out = wire.Message{Type: wire.Error, ID: m.ID, Error: fmt.Sprintf("unknown message type %q", m.Type)}
		}
		ob, _ := json.Marshal(out)
		if err := c.Write(ctx, websocket.MessageText, ob); err != nil {
			return
		}
	}
}

func (s *Server) serveReplicate(w http.ResponseWriter, r *http.Request) {
	var in []wire.Session
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.apply(in)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) serveSnapshot(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	all := make([]wire.Session, 0, len(s.sessions))
	for _, v := range s.sessions {
		all = append(all, clone(v))
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(all)
}

// Bootstrap copies every session the peer holds; a region that comes back after a
// crash calls it before serving, so failback finds the sessions written meanwhile.
func (s *Server) Bootstrap(ctx context.Context) (int, error) {
	if s.cfg.Peer == "" {
		return 0, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.Peer+"/snapshot", nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("snapshot: %s", resp.Status)
	}
	var in []wire.Session
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&in); err != nil {
		return 0, err
	}
	s.apply(in)
	return len(in), nil
}

// Replicate flushes the queue to the peer every ReplicateEvery until ctx ends. A
// failed flush puts its users back in the queue; the queue holds each user once, so it
// is bounded by the number of users however long the peer is away.
func (s *Server) Replicate(ctx context.Context) {
	if s.cfg.Peer == "" {
		return
	}
	t := time.NewTicker(s.cfg.ReplicateEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.flush(ctx)
	}
}

func (s *Server) flush(ctx context.Context) {
	s.mu.Lock()
	batch := make([]wire.Session, 0, len(s.dirty))
	for u := range s.dirty {
		batch = append(batch, clone(s.sessions[u]))
	}
	clear(s.dirty)
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := s.post(ctx, batch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		for _, v := range batch {
			s.dirty[v.User] = struct{}{}
		}
		if !s.peerDown {
			s.cfg.Logf("replication to %s failing, %d sessions queued: %v", s.cfg.Peer, len(s.dirty), err)
		}
		s.peerDown = true
		return
	}
	if s.peerDown {
		s.cfg.Logf("replication to %s recovered", s.cfg.Peer)
	}
	s.peerDown = false
}

func (s *Server) post(ctx context.Context, batch []wire.Session) error {
	b, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Peer+"/replicate", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("replicate: %s", resp.Status)
	}
	return nil
}
