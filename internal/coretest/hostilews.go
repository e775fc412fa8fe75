package coretest

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile is how a HostileWS server behaves after the WebSocket opening handshake.
type Hostile int

const (
	// BigFrameThenClose sends one text frame of BigFrame bytes, then a close frame.
	BigFrameThenClose Hostile = iota + 1
	// PingFlood sends empty ping frames as fast as the connection takes them and
	// never a data frame or a close frame.
	PingFlood
)

// BigFrame is the payload size of BigFrameThenClose's frame: 100 MB.
const BigFrame = 100 << 20

// hostileFor bounds how long one connection of a HostileWS server keeps sending.
const hostileFor = 10 * time.Second

// HostileServer is a running HostileWS server.
type HostileServer struct {
	Addr  string       // host:port on loopback
	Conns atomic.Int64 // connections upgraded so far
	Sent  atomic.Int64 // bytes written after upgrades, over all connections
}

// HostileWS starts a WebSocket server on loopback that completes the opening
// handshake of every connection and then behaves as how says, reading (and
// discarding) what the client sends. Each connection sends for at most 10 s or
// until the client goes away; the server stops when the test ends.
func HostileWS(t testing.TB, how Hostile) *HostileServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &HostileServer{Addr: ln.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				s.serve(c, how)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

func (s *HostileServer) serve(c net.Conn, how Hostile) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if _, err := io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(h[:])+"\r\n\r\n"); err != nil {
		return
	}
	s.Conns.Add(1)
	go io.Copy(io.Discard, br) // the client's frames; ends when c closes
	c.SetWriteDeadline(time.Now().Add(hostileFor))
	switch how {
	case BigFrameThenClose:
		s.bigFrameThenClose(c)
	case PingFlood:
		s.pingFlood(c)
	}
}

func (s *HostileServer) write(c net.Conn, p []byte) bool {
	n, err := c.Write(p)
	s.Sent.Add(int64(n))
	return err == nil
}

func (s *HostileServer) bigFrameThenClose(c net.Conn) {
	hdr := []byte{0x81, 127, 0, 0, 0, 0, 0, 0, 0, 0} // FIN, text, 64-bit length
	binary.BigEndian.PutUint64(hdr[2:], BigFrame)
	if !s.write(c, hdr) {
		return
	}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = 'x'
	}
	for left := BigFrame; left > 0; left -= len(chunk) {
		if !s.write(c, chunk[:min(left, len(chunk))]) {
			return
		}
	}
	s.write(c, []byte{0x88, 2, 0x03, 0xe8}) // close, status 1000
}

func (s *HostileServer) pingFlood(c net.Conn) {
	batch := make([]byte, 0, 2*1024)
	for range 1024 {
		batch = append(batch, 0x89, 0) // FIN, ping, no payload
	}
	for range 1 << 20 { // at most 2 GB of pings; the write deadline ends it sooner
		if !s.write(c, batch) {
			return
		}
	}
}
