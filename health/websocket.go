package health

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/coder/websocket"
)

const (
	// maxWSMessage bounds one message read from a websocket endpoint; a larger one
	// fails the probe instead of filling memory.
	maxWSMessage = 64 << 10
	// maxWSMessages bounds how many replies a probe reads while waiting for Expect.
	maxWSMessages = 64
)

// wsChecker probes a ws:// or wss:// endpoint: the heartbeat of the WebSocket
// disaster-recovery pattern. It opens a new connection per probe, sends Send (if
// any) and passes when a reply containing Expect arrives (any reply when Expect is
// empty). With neither, a completed opening and closing handshake passes.
type wsChecker struct {
	url    string
	opts   websocket.DialOptions
	send   []byte
	expect []byte
}

func newWSChecker(spec *Spec, agent string) (Checker, error) {
	u, err := url.Parse(spec.Target)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return nil, fmt.Errorf("scheme %q, expected ws or wss", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("target %q has no host", spec.Target)
	}
	name := spec.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	if name == "" {
		name = u.Hostname()
	}
	tc := &tls.Config{
		InsecureSkipVerify: true, // like https checks, certificates are not validated
		MinVersion:         tls.VersionTLS10,
	}
	if net.ParseIP(name) == nil {
		tc.ServerName = name
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := traceFrom(ctx).dial(ctx, network, addr)
			if p := probeFrom(ctx); p != nil && err == nil {
				p.setRaw(c)
			}
			return c, err
		},
		TLSClientConfig:        tc,
		DisableKeepAlives:      true, // a fresh connection per probe, no idle sockets
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	c := &wsChecker{
		url: u.String(),
		opts: websocket.DialOptions{
			HTTPClient: &http.Client{
				Transport: budgetTransport{base: tr},
				CheckRedirect: func(*http.Request, []*http.Request) error {
					return http.ErrUseLastResponse // a redirect is not an upgrade: fail
				},
			},
			HTTPHeader:      http.Header{"User-Agent": {agent}},
			Host:            spec.Host,
			CompressionMode: websocket.CompressionDisabled, // frames on the wire are what is read
		},
		send:   []byte(spec.Send),
		expect: []byte(spec.Expect),
	}
	return c, nil
}

// Check runs one heartbeat probe; it returns by the time ctx ends, closing the
// socket underneath the library if the peer stalls a handshake. Whatever the
// endpoint sends, the probe reads at most maxWSBytes and maxWSFrames after the
// opening handshake (see wsBudget); past them it fails.
func (w *wsChecker) Check(ctx context.Context) error {
	p := &wsProbe{}
	conn, resp, err := websocket.Dial(context.WithValue(ctx, wsProbeKey{}, p), w.url, &w.opts)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return fmt.Errorf("handshake: status %d", resp.StatusCode)
		}
		return fmt.Errorf("handshake: %w", err)
	}
	// The closing handshake waits on the peer with its own timers; ctx's end
	// closes the socket, which ends it at once.
	stop := context.AfterFunc(ctx, p.closeRaw)
	defer stop()
	defer conn.CloseNow()
	conn.SetReadLimit(maxWSMessage)
	err = w.converse(ctx, conn, p)
	if p.spent() {
		return errWSBudget
	}
	return err
}

// converse runs the probe on an open connection: the closing handshake alone, or
// the heartbeat and the wait for its reply.
func (w *wsChecker) converse(ctx context.Context, conn *websocket.Conn, p *wsProbe) error {
	if len(w.send) == 0 && len(w.expect) == 0 {
		err := conn.Close(websocket.StatusNormalClosure, "")
		if ctx.Err() != nil {
			return fmt.Errorf("closing handshake: %w", ctx.Err())
		}
		if err != nil && !closedNormally(err) {
			return fmt.Errorf("closing handshake: %w", err)
		}
		if !p.closedByPeer() {
			return errors.New("closing handshake: the endpoint never sent its close frame")
		}
		return nil
	}
	if len(w.send) > 0 {
		if err := conn.Write(ctx, websocket.MessageText, w.send); err != nil {
			return fmt.Errorf("sending heartbeat: %w", err)
		}
	}
	for range maxWSMessages {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			if s := websocket.CloseStatus(err); s != -1 {
				return fmt.Errorf("closed by the endpoint before a reply (status %d)", s)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("no reply containing %q in time: %w", w.expect, ctx.Err())
			}
			return fmt.Errorf("waiting for a reply: %w", err)
		}
		if bytes.Contains(msg, w.expect) {
			conn.Close(websocket.StatusNormalClosure, "") // courtesy; the probe has passed
			return nil
		}
	}
	return fmt.Errorf("no reply containing %q in %d messages", w.expect, maxWSMessages)
}

// closedNormally reports whether err only says the peer ended the connection with
// a normal closure of its own.
func closedNormally(err error) bool {
	return websocket.CloseStatus(err) == websocket.StatusNormalClosure || errors.Is(err, net.ErrClosed)
}
