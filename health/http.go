package health

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	// maxHeaderBytes bounds what a probe reads before the body: an endpoint that
	// floods headers fails the probe instead of filling memory.
	maxHeaderBytes = 64 << 10
	// maxRawBody bounds the (possibly compressed) body bytes read to find the first
	// MatchWindow decoded bytes; only a pathological encoding needs more.
	maxRawBody = 256 << 10
)

// httpChecker probes an http or https URL the way Route 53's HTTP, HTTPS and
// *_STR_MATCH checks do, with their timeouts. It speaks HTTP/1.1 on a fresh
// connection per probe, so it controls every deadline and reads no byte it does
// not need.
type httpChecker struct {
	addr    *probeAddr  // host:port to dial
	tls     *tls.Config // nil for http
	request []byte      // the whole request, built once
	status  [2]int
	match   []byte

	// Phase limits: to connect, from connected to the status line, then to the
	// match. Route 53's 4 s, 2 s and 2 s, or each the check's timeout.
	connect, response, body time.Duration
}

func newHTTPChecker(spec *Spec, agent string) (Checker, error) {
	u, err := url.Parse(spec.Target)
	if err != nil {
		return nil, err
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("target %q has no host", spec.Target)
	}
	c := &httpChecker{status: spec.Status, match: []byte(spec.Match),
		connect: httpConnect, response: HTTPResponse, body: HTTPBody}
	if spec.Timeout > 0 {
		c.connect, c.response, c.body = spec.Timeout, spec.Timeout, spec.Timeout
	}
	if c.status == [2]int{} {
		c.status = [2]int{DefaultStatusMin, DefaultStatusMax}
	}
	defPort := "80"
	if spec.Type == HTTPS || u.Scheme == "https" {
		defPort = "443"
	}
	port := u.Port()
	if port == "" {
		port = defPort
	}
	c.addr = newProbeAddr(net.JoinHostPort(u.Hostname(), port))

	// Host header, as Route 53 sends it: the name, with :port off the default port;
	// without a name, the address in its place. A host option that carries its own
	// port is sent as it is.
	name := spec.Host
	hostHdr := ""
	if h, _, err := net.SplitHostPort(name); err == nil {
		hostHdr, name = spec.Host, h
	}
	if name == "" {
		name = u.Hostname()
	}
	if hostHdr == "" {
		hostHdr = name
		if port != defPort {
			hostHdr = net.JoinHostPort(name, port)
		} else if strings.Contains(name, ":") {
			hostHdr = "[" + name + "]"
		}
	}
	if defPort == "443" {
		c.tls = &tls.Config{
			InsecureSkipVerify: true, // Route 53 does not validate certificates
			MinVersion:         tls.VersionTLS10,
			NextProtos:         []string{"http/1.1"},
		}
		if net.ParseIP(name) == nil {
			c.tls.ServerName = name // SNI whenever a name is known
		}
	}
	uri := u.EscapedPath()
	if !strings.HasPrefix(uri, "/") {
		uri = "/" + uri // Route 53 adds a missing leading slash
	}
	if u.RawQuery != "" {
		uri += "?" + u.RawQuery
	}
	req := "GET " + uri + " HTTP/1.1\r\nHost: " + hostHdr + "\r\nUser-Agent: " + agent + "\r\nAccept: */*\r\n"
	if len(c.match) > 0 {
		req += "Accept-Encoding: gzip, deflate\r\n"
	}
	c.request = []byte(req + "Connection: close\r\n\r\n")
	return c, nil
}

// Check runs one HTTP(S) probe with Route 53's limits: connected within 4 s, the
// status line within 2 s after that (TLS handshake included), and with a match
// string the body within 2 s more. A set timeout bounds each phase and, through
// ctx (the scheduler's budget), the whole probe.
func (c *httpChecker) Check(ctx context.Context) error {
	conn, err := traceFrom(ctx).dialProbe(ctx, c.addr, c.connect)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	// A cancelled ctx (budget spent, check released) interrupts any read or write.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := setDeadline(ctx, conn, c.response); err != nil {
		return err
	}

	if c.tls != nil {
		tc := tls.Client(conn, c.tls)
		if err := timedHandshake(traceFrom(ctx), tc); err != nil {
			return fmt.Errorf("tls handshake: %w", err)
		}
		conn = tc
	}
	if _, err := conn.Write(c.request); err != nil {
		return fmt.Errorf("sending request: %w", err)
	}
	return c.judge(&firstByteReader{conn, traceFrom(ctx)}, func() error { return setDeadline(ctx, conn, c.body) })
}

// headReaders are the 4 KiB buffers judge reads responses through, reused: a buffer
// each probe was most of the garbage probing makes.
var headReaders = sync.Pool{New: func() any { return &headReader{br: bufio.NewReaderSize(nil, 4096)} }}

// headReader is judge's reading state, pooled: the buffer, the bound on the bytes
// read and, for the status-only path, the stream's first error kept (see sticky).
type headReader struct {
	br     *bufio.Reader
	lim    io.LimitedReader
	sticky stickyReader
}

// judge reads a response from r and decides the probe: the status line and
// headers (at most maxHeaderBytes), the status range, then with a match string the
// body, decoded, up to MatchWindow bytes (at most maxRawBody bytes read). toBody is
// called between the headers and the body: the body's deadline.
func (c *httpChecker) judge(r io.Reader, toBody func() error) error {
	hr := headReaders.Get().(*headReader) // nothing keeps it past judge
	defer func() {
		hr.br.Reset(nil)
		hr.lim.R, hr.sticky = nil, stickyReader{}
		headReaders.Put(hr)
	}()
	lim, br := &hr.lim, hr.br
	lim.R, lim.N = r, maxHeaderBytes
	if len(c.match) == 0 {
		// Only the status decides: a plain head is read without net/http, and
		// anything else by http.ReadResponse from the same bytes and errors.
		hr.sticky.r = lim
		br.Reset(&hr.sticky)
		if code, ok := quickStatus(br); ok {
			return c.judgeStatus(code)
		}
	} else {
		br.Reset(lim)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		if lim.N == 0 {
			return fmt.Errorf("reading response: headers longer than %d bytes", maxHeaderBytes)
		}
		return fmt.Errorf("reading response: %w", err)
	}
	if err := c.judgeStatus(resp.StatusCode); err != nil || len(c.match) == 0 {
		return err // without a match the body is never read: closing the connection discards it
	}
	if err := toBody(); err != nil {
		return err
	}
	lim.N = maxRawBody
	found, err := search(resp, c.match)
	if found {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading body: %w", err)
	}
	return fmt.Errorf("%q not found in the first %d bytes of the body", c.match, matchWindow)
}

// judgeStatus passes a status within the check's range.
func (c *httpChecker) judgeStatus(code int) error {
	if code < c.status[0] || code > c.status[1] {
		return fmt.Errorf("status %d outside %d-%d", code, c.status[0], c.status[1])
	}
	return nil
}

// setDeadline gives conn the deadline d from now, or ctx's deadline when that is
// sooner. It fails when ctx has ended, so that the new deadline cannot undo the
// one ctx's end set.
func setDeadline(ctx context.Context, conn net.Conn, d time.Duration) error {
	t := time.Now().Add(d)
	if dl, ok := ctx.Deadline(); ok && dl.Before(t) {
		t = dl
	}
	conn.SetDeadline(t)
	return ctx.Err()
}

// search reports whether match lies entirely within the first MatchWindow bytes of
// resp's decoded body (gzip and deflate are decoded, as Route 53 does). It stops
// reading as soon as match is seen, and never reads past the window.
func search(resp *http.Response, match []byte) (bool, error) {
	r, err := decoded(resp)
	if err != nil {
		return false, err
	}
	buf := make([]byte, 0, matchWindow)
	// Each round reads at least one byte or ends; the count guards a reader that
	// keeps returning nothing.
	for range matchWindow + 16 {
		if len(buf) == matchWindow {
			return false, nil
		}
		n, err := r.Read(buf[len(buf):matchWindow])
		from := max(0, len(buf)-len(match)+1)
		buf = buf[:len(buf)+n]
		if n > 0 && bytes.Contains(buf[from:], match) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return false, io.ErrNoProgress
}

// decoded returns resp's body with its gzip or deflate content coding removed.
func decoded(resp *http.Response) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, nil
	case "deflate":
		// "deflate" is zlib-wrapped by the RFC, raw by some servers: try both.
		br := bufio.NewReaderSize(resp.Body, 512)
		hdr, err := br.Peek(2)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(hdr) == 2 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 && hdr[0]&0x0f == 8 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, fmt.Errorf("deflate: %w", err)
			}
			return zr, nil
		}
		return flate.NewReader(br), nil
	}
	return resp.Body, nil
}
