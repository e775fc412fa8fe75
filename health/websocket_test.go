package health

import (
	"bufio"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/healthroute/healthroute/internal/coretest"
)

// wsServer serves WebSocket connections with behave; it records the User-Agent of
// the last handshake.
func wsServer(t *testing.T, secure bool, behave func(c *websocket.Conn, r *http.Request)) (*httptest.Server, chan string) {
	t.Helper()
	agents := make(chan string, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case agents <- r.UserAgent():
		default:
		}
		if r.URL.Path == "/plain" {
			w.Write([]byte("not a websocket"))
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		behave(c, r)
	})
	var srv *httptest.Server
	if secure {
		srv = httptest.NewUnstartedServer(h)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{expiredCert(t)}}
		srv.StartTLS()
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv, agents
}

func TestWebSocket(t *testing.T) {
	echo := func(c *websocket.Conn, r *http.Request) {
		for range 10 {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if string(msg) == `{"action":"heartbeat"}` {
				msg = []byte(`{"type":"pong"}`)
			}
			c.Write(r.Context(), typ, msg)
		}
	}
	chatty := func(c *websocket.Conn, r *http.Request) {
		c.Write(r.Context(), websocket.MessageText, []byte("hello"))
		c.Write(r.Context(), websocket.MessageText, []byte("tick pong"))
		c.Read(r.Context()) // until the client closes
	}
	silent := func(c *websocket.Conn, r *http.Request) {
		for range 10 { // reads the heartbeat, never answers, until the client closes
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}
	closes := func(c *websocket.Conn, r *http.Request) { c.Close(websocket.StatusGoingAway, "bye") }
	huge := func(c *websocket.Conn, r *http.Request) {
		c.Read(r.Context())
		c.Write(r.Context(), websocket.MessageText, []byte(strings.Repeat("x", 1<<20)))
	}
	tests := []struct {
		name         string
		secure       bool
		behave       func(*websocket.Conn, *http.Request)
		path         string
		send, expect string
		want         string
	}{
		{"answers", false, echo, "/ws", `{"action":"heartbeat"}`, "pong", ""},
		{"answers over wss, expired certificate", true, echo, "/ws", `{"action":"heartbeat"}`, "pong", ""},
		{"answers without expect", false, echo, "/ws", "ping", "", ""},
		{"answers something else", false, echo, "/ws", "ping", "pong", "no reply"},
		{"pushes without send", false, chatty, "/ws", "", "pong", ""},
		{"connect and close only", false, silent, "/ws", "", "", ""},
		{"stays silent", false, silent, "/ws", `{"action":"heartbeat"}`, "pong", "no reply"},
		{"closes", false, closes, "/ws", `{"action":"heartbeat"}`, "pong", "closed by the endpoint"},
		{"floods one message", false, huge, "/ws", "ping", "pong", "reply"},
		{"not a websocket", false, echo, "/plain", "ping", "pong", "handshake"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, agents := wsServer(t, tc.secure, tc.behave)
			target := "ws" + strings.TrimPrefix(srv.URL, "http") + tc.path
			// A case that waits out its budget ("no reply") has 500 ms of it; the
			// others have room to finish on a loaded machine (TLS, the closing
			// handshake), and end well before it.
			budget := 5 * time.Second
			if tc.want == "no reply" {
				budget = 500 * time.Millisecond
			}
			spec := &Spec{Name: "t", Type: WebSocket, Target: target, Send: tc.send, Expect: tc.expect, Timeout: budget}
			err, took := probeOnce(t, spec)
			wantResult(t, err, tc.want)
			if took > budget+500*time.Millisecond {
				t.Errorf("probe took %s; want at most its %s budget", took, budget)
			}
			if ua := <-agents; ua != testAgent {
				t.Errorf("User-Agent %q; want %q", ua, testAgent)
			}
		})
	}
	t.Run("closed port", func(t *testing.T) {
		err, _ := probeOnce(t, &Spec{Name: "t", Type: WebSocket, Target: "ws://" + coretest.ClosedPort(t) + "/"})
		wantResult(t, err, "refused")
	})
	hangs := []struct {
		name  string
		serve func(c net.Conn, done <-chan struct{})
		send  string
		want  string
	}{
		{"hangs in the opening handshake", func(c net.Conn, done <-chan struct{}) { <-done }, "", "handshake"},
		{"hangs in the closing handshake", func(c net.Conn, done <-chan struct{}) {
			// Completes the upgrade, then never answers the close frame.
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err != nil {
				return
			}
			h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
				"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(h[:])+"\r\n\r\n")
			<-done
		}, "", "closing handshake"},
	}
	for _, tc := range hangs {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawServer(t, tc.serve)
			err, took := probeOnce(t, &Spec{Name: "t", Type: WebSocket, Target: "ws://" + addr + "/", Interval: 300 * time.Millisecond})
			wantResult(t, err, tc.want)
			if took > time.Second {
				t.Errorf("probe took %s; want its 300ms budget", took)
			}
		})
	}
}
