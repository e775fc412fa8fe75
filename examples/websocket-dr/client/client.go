// Package client is the example's WebSocket client: it finds the service through
// healthroute on every (re)connect, watches the connection with heartbeats, reconnects
// with exponential backoff and full jitter, and resumes its session by user ID in
// whichever region DNS points at.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/healthroute/healthroute/examples/websocket-dr/wire"
)

// Errors a connection ends with, and Run's error after the last attempt.
var (
	ErrHeartbeat    = errors.New("heartbeat: consecutive replies missing or invalid")
	ErrDisconnected = errors.New("disconnected before the write was acknowledged")
	ErrGaveUp       = errors.New("gave up reconnecting")
	ErrRefused      = errors.New("refused by the region")
)

// State is where the client is in its connection cycle.
type State uint8

// The states, in the order a reconnect goes through them.
const (
	Connecting   State = iota + 1 // resolving the name, dialling, resuming the session
	Connected                     // the session is resumed; writes flow
	Disconnected                  // the connection (or an attempt) ended; Err says why
	Waiting                       // backing off before the next attempt; Delay says how long
	Failed                        // gave up after Backoff.Attempts consecutive failures
)

var stateNames = [...]string{Connecting: "connecting", Connected: "connected",
	Disconnected: "disconnected", Waiting: "waiting", Failed: "failed"}

func (s State) String() string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Event is one state change, reported through Options.OnEvent.
type Event struct {
	Time    time.Time
	User    string
	State   State
	Attempt int           // Connecting, Connected, Waiting: retry number since the last connection (0: the first try)
	Addr    string        // Connecting (once resolved), Connected: host:port dialled
	Region  string        // Connected: the region that resumed the session
	Version uint64        // Connected: the session version that region holds
	Lost    uint64        // Connected: writes acknowledged before that the region does not hold
	Delay   time.Duration // Waiting
	Err     error         // Disconnected, Failed
}

// Conn is one message-oriented connection; the WebSocket one comes from DialWebSocket.
type Conn interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	Close() error
}

// Options configure a Client. Name, DNS (or Resolve), Port and User are required.
type Options struct {
	Name      string        // service name, resolved through healthroute on every (re)connect
	DNS       string        // healthroute's address, host:port
	Port      int           // the service port in every region
	Path      string        // WebSocket path; default "/ws"
	User      string        // session key
	Heartbeat time.Duration // between heartbeats; default 30s
	MaxMisses int           // consecutive missing or invalid replies that close; default 2
	Handshake time.Duration // dial plus hello/welcome budget; default 5s
	Backoff   Backoff
	OnEvent   func(Event) // called from the client's goroutine; must not block

	Resolve func(ctx context.Context, name string) (netip.Addr, error) // default: A query to DNS
	Dial    func(ctx context.Context, url, host string) (Conn, error)  // default: DialWebSocket
	Now     func() time.Time                                           // default: time.Now
}

// Client keeps one user's session connected. Run drives it; Write sends through it.
type Client struct {
	o      Options
	writes chan *writeReq

	mu    sync.Mutex
	acked uint64 // highest version acknowledged to this client
}

type writeReq struct {
	value string
	done  chan writeRes // buffered 1
}

type writeRes struct {
	version uint64
	err     error
}

// New returns a Client for o, filling in defaults.
func New(o Options) *Client {
	if o.Path == "" {
		o.Path = "/ws"
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 30 * time.Second
	}
	if o.MaxMisses <= 0 {
		o.MaxMisses = 2
	}
	if o.Handshake <= 0 {
		o.Handshake = 5 * time.Second
	}
	o.Backoff = o.Backoff.withDefaults()
	if o.Resolve == nil {
		o.Resolve = Resolver{Server: o.DNS}.Resolve
	}
	if o.Dial == nil {
		o.Dial = DialWebSocket
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{o: o, writes: make(chan *writeReq)}
}

// Acked returns the highest session version acknowledged to this client.
func (c *Client) Acked() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acked
}

// Write appends value to the session and returns the version the region acknowledged.
// It waits for a connection; a write in flight when the connection drops fails with
// ErrDisconnected and may or may not have been applied.
func (c *Client) Write(ctx context.Context, value string) (uint64, error) {
	w := &writeReq{value: value, done: make(chan writeRes, 1)}
	select {
	case c.writes <- w:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case r := <-w.done:
		return r.version, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (c *Client) emit(e Event) {
	if c.o.OnEvent != nil {
		e.Time, e.User = c.o.Now(), c.o.User
		c.o.OnEvent(e)
	}
}

// Run connects and keeps the session connected until ctx ends (it returns ctx's
// error) or Backoff.Attempts consecutive retries failed (ErrGaveUp). The first
// connection is tried at once; retry n since the last connection (from 0) waits
// Backoff.Delay(n) first, including the first retry after a lost connection, so
// clients that lost the same region at the same instant spread out.
func (c *Client) Run(ctx context.Context) error {
	retry := 0 // retries since the last connection
	for first := true; ; first = false {
		if !first {
			if retry >= c.o.Backoff.Attempts {
				c.emit(Event{State: Failed, Attempt: retry, Err: ErrGaveUp})
				return ErrGaveUp
			}
			d := c.o.Backoff.Delay(retry)
			retry++
			c.emit(Event{State: Waiting, Attempt: retry, Delay: d})
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		conn, err := c.connect(ctx, retry)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.emit(Event{State: Disconnected, Attempt: retry, Err: err})
			continue
		}
		retry = 0
		err = c.session(ctx, conn)
		conn.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.emit(Event{State: Disconnected, Err: err})
	}
}

// connect resolves the name (every time: DNS is how failover reaches the client),
// dials, and resumes the session. It reports Connecting and Connected.
func (c *Client) connect(ctx context.Context, attempt int) (Conn, error) {
	c.emit(Event{State: Connecting, Attempt: attempt})
	hctx, cancel := context.WithTimeout(ctx, c.o.Handshake)
	defer cancel()
	ip, err := c.o.Resolve(hctx, c.o.Name)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", c.o.Name, err)
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(c.o.Port))
	conn, err := c.o.Dial(hctx, "ws://"+addr+c.o.Path, strings.TrimSuffix(c.o.Name, "."))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	acked := c.Acked()
	if err := send(hctx, conn, wire.Message{Type: wire.Hello, User: c.o.User, Version: acked}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("hello %s: %w", addr, err)
	}
	data, err := conn.Read(hctx)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("welcome %s: %w", addr, err)
	}
	var m wire.Message
	if err := json.Unmarshal(data, &m); err != nil || m.Type != wire.Welcome {
		conn.Close()
		return nil, fmt.Errorf("welcome %s: unexpected reply %.80q", addr, data)
	}
	var lost uint64
	c.mu.Lock()
	if c.acked > m.Version {
		lost = c.acked - m.Version
	}
	c.acked = m.Version // the region's copy is the session from now on
	c.mu.Unlock()
	c.emit(Event{State: Connected, Attempt: attempt, Addr: addr, Region: m.Region, Version: m.Version, Lost: lost})
	return conn, nil
}

func send(ctx context.Context, conn Conn, m wire.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return conn.Write(ctx, b)
}

// session serves one connection until it fails: heartbeats every Heartbeat, writes
// as they come, replies as they arrive. It returns why the connection ended.
func (c *Client) session(ctx context.Context, conn Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	frames, readErr := make(chan []byte), make(chan error, 1)
	go func() {
		for {
			b, err := conn.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case frames <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	pending := map[uint64]*writeReq{}
	defer func() {
		for _, w := range pending {
			w.done <- writeRes{err: ErrDisconnected}
		}
	}()
	hb := heartbeat{max: c.o.MaxMisses}
	tick := time.NewTicker(c.o.Heartbeat)
	defer tick.Stop()
	var id uint64
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return err
		case <-tick.C:
			id++
			if !hb.due(id) {
				return ErrHeartbeat
			}
			if err := send(ctx, conn, wire.Message{Type: wire.Heartbeat, ID: id}); err != nil {
				return err
			}
		case w := <-c.writes:
			id++
			pending[id] = w
			if err := send(ctx, conn, wire.Message{Type: wire.Write, ID: id, Value: w.value}); err != nil {
				return err
			}
		case b := <-frames:
			var m wire.Message
			if json.Unmarshal(b, &m) != nil {
				m = wire.Message{}
			}
			switch w := pending[m.ID]; {
			case m.Type == wire.Pong:
				if !hb.pong(m.ID) {
					return ErrHeartbeat
				}
			case m.Type == wire.Ack && w != nil:
				delete(pending, m.ID)
				c.mu.Lock()
				c.acked = max(c.acked, m.Version)
				c.mu.Unlock()
				w.done <- writeRes{version: m.Version}
			case m.Type == wire.Error && w != nil:
				delete(pending, m.ID)
				w.done <- writeRes{err: fmt.Errorf("%w: %s", ErrRefused, m.Error)}
			default:
				if !hb.invalid() {
					return ErrHeartbeat
				}
			}
		}
	}
}
