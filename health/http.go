package health

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxHeaderBytes bounds what a probe reads before the body: an endpoint that floods
// headers fails the probe instead of filling memory.
const maxHeaderBytes = 64 << 10

type httpChecker struct {
	spec   *Spec
	tls    bool
	addr   string // host:port to dial
	host   string // Host header
	sni    string // TLS server name; "" for an IP
	uri    string // request-target
	agent  string
	status [2]int
	match  []byte
}

func newHTTPChecker(spec *Spec, agent string) (Checker, error) {
	u, err := url.Parse(spec.Target)
	if err != nil {
		return nil, err
	}
	c := &httpChecker{spec: spec, tls: spec.Type == HTTPS, agent: agent, status: spec.Status, match: []byte(spec.Match)}
	if c.status == [2]int{} {
		c.status = [2]int{DefaultStatusMin, DefaultStatusMax}
	}
	defPort := "80"
	if c.tls {
		defPort = "443"
	}
	port := u.Port()
	if port == "" {
		port = defPort
	}
	c.addr = net.JoinHostPort(u.Hostname(), port)
	// Host header, as ROUTE53.md 2.1: the name (with :port off the default port),
	// else the URL's host, else the IP address.
	name := spec.Host
	if name == "" {
		name = u.Hostname()
	}
	c.host = name
	if port != defPort {
		c.host = net.JoinHostPort(name, port)
	} else if strings.Contains(name, ":") {
		c.host = "[" + name + "]"
	}
	if net.ParseIP(name) == nil {
		c.sni = name
	}
	c.uri = u.RequestURI()
	if !strings.HasPrefix(c.uri, "/") {
		c.uri = "/" + c.uri
	}
	return c, nil
}

// Check runs one HTTP(S) probe with Route 53's limits: connected within 4 s, the
// status line within 2 s after that (TLS handshake included), and with a match
// string the body within 2 s more. A set timeout bounds the whole probe instead.
func (c *httpChecker) Check(ctx context.Context) error {
	connect, response, body := HTTPConnect, HTTPResponse, HTTPBody
	if c.spec.Timeout > 0 {
		connect, response, body = c.spec.Timeout, c.spec.Timeout, c.spec.Timeout
	}
	dctx, cancel := context.WithTimeout(ctx, connect)
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", c.addr)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close()
	start := time.Now()
	deadline := start.Add(response)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if c.tls {
		tc := tls.Client(conn, &tls.Config{
			ServerName:         c.sni,
			InsecureSkipVerify: true, // Route 53 does not validate certificates
			MinVersion:         tls.VersionTLS10,
		})
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("tls handshake: %w", err)
		}
		conn = tc
	}
	req := "GET " + c.uri + " HTTP/1.1\r\nHost: " + c.host + "\r\nUser-Agent: " + c.agent +
		"\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return err
	}
	lim := &io.LimitedReader{R: conn, N: maxHeaderBytes}
	br := bufio.NewReaderSize(lim, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("reading response: %w", err)
	}
	if resp.StatusCode < c.status[0] || resp.StatusCode > c.status[1] {
		return fmt.Errorf("status %d outside %d-%d", resp.StatusCode, c.status[0], c.status[1])
	}
	if len(c.match) == 0 {
		return nil
	}
	deadline = time.Now().Add(body)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	lim.N = 1 << 20 // the raw (possibly compressed) body; decoded bytes are capped below
	found, err := search(resp, c.match)
	if err != nil {
		return fmt.Errorf("reading body: %w", err)
	}
	if !found {
		return fmt.Errorf("%q not found in the first %d bytes of the body", c.match, MatchWindow)
	}
	return nil
}

// search reports whether match lies entirely within the first MatchWindow bytes of
// resp's decoded body. It reads no further than that window.
func search(resp *http.Response, match []byte) (bool, error) {
	var r io.Reader = resp.Body
	switch strings.ToLower(resp.Header.Get("Content-Encoding")) {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return false, err
		}
		r = zr
	case "deflate":
		// "deflate" is zlib-wrapped by the RFC, raw by some servers: try both.
		br := bufio.NewReader(r)
		if hdr, err := br.Peek(2); err == nil && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 && hdr[0]&0x0f == 8 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return false, err
			}
			r = zr
		} else {
			r = flate.NewReader(br)
		}
	}
	buf := make([]byte, MatchWindow)
	n, err := io.ReadFull(r, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	if bytes.Contains(buf[:n], match) {
		return true, nil
	}
	return false, err
}
