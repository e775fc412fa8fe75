package test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// The API's connection limits, as README's Security section gives them.
const (
	operatorMaxConns  = 128
	operatorPerClient = 16
)

// operatorDial opens n TCP connections to addr from the loopback address src, each
// sending the start of a request it never finishes (slowloris). A connection the
// server refuses before the dial returns is left out.
func operatorDial(t *testing.T, src, addr string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := d.Dial("tcp", addr)
		if errors.Is(err, syscall.ECONNRESET) {
			continue
		}
		if err != nil {
			t.Fatalf("dial %s from %s: %v", addr, src, err)
		}
		conns = append(conns, c)
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n")) // may fail on a refused connection
	}
	return conns
}

// operatorChecksFrom is apiChecks from the loopback address src, on a fresh connection.
func operatorChecksFrom(t *testing.T, src, base string) map[string]view.Check {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := c.Get(base + "/v1/checks")
	if err != nil {
		t.Fatalf("GET /v1/checks from %s: %v", src, err)
	}
	defer resp.Body.Close()
	var v struct{ Checks []view.Check }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/checks from %s: %d %v", src, resp.StatusCode, err)
	}
	out := map[string]view.Check{}
	for _, c := range v.Checks {
		out[c.Name] = c
	}
	return out
}

// operatorHeld reports how many of conns the server still holds open: a read on a
// connection the server closed (refused) ends at once; on a held one it waits for
// the deadline, which is shorter than the API's header timeout (5 s).
func operatorHeld(conns []net.Conn) int {
	var held atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(deadline)
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				held.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(held.Load())
}

// operatorFDs counts the open file descriptors of process pid.
func operatorFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestOperatorAPIFlood: under `ulimit -n 1024`, 1,120 slowloris connections to the
// API from 70 addresses (16 each, the per-client limit) leave a healthy check
// healthy and every DNS answer, over UDP and TCP, unchanged: the API holds at most
// its 128 connections, closes the rest at once, and logs that a few times, not a
// thousand. One client is held to its 16 connections. While the flood holds its
// connections, a request from another client and one from a flooding client are
// answered: each new connection takes the place of a flooding one that sends
// nothing. Slow and oversized headers are cut off.
func TestOperatorAPIFlood(t *testing.T) {
	var probes atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { probes.Add(1) }))
	t.Cleanup(web.Close)
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d
		%s
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
	}
}
`, port, apiPort, fastCheck("web", web.URL+"/health"))
	srv := coretest.StartWith(t, corefile, port, "www.example.org", coretest.Options{NoFile: 1024})
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	api := fmt.Sprintf("127.0.0.1:%d", apiPort)
	waitUntil(t, 10*time.Second, "web has a first result", func() bool { return apiChecks(t, base)["web"].Seen },
		func() string { _, b := httpDo(t, http.MethodGet, base+"/v1/checks", "", ""); return b })

	// One client: 40 connections, 16 held; another client is served meanwhile.
	one := operatorDial(t, "127.0.0.2", api, 40)
	if held := operatorHeld(one); held != operatorPerClient {
		t.Errorf("one client opened 40 connections: the API holds %d, want %d", held, operatorPerClient)
	}
	if c := apiChecks(t, base)["web"]; !c.Healthy {
		t.Errorf("another client, while one is at its limit: web %+v", c)
	}
	if c := operatorChecksFrom(t, "127.0.0.2", base)["web"]; !c.Healthy {
		t.Errorf("the client at its limit: web %+v", c)
	}
	for _, c := range one {
		c.Close()
	}

	// The flood: DNS is asked over UDP and TCP all along, and must not change.
	stop := make(chan struct{})
	var queries, wrong atomic.Int64
	var lastWrong atomic.Value
	var wg sync.WaitGroup
	for _, proto := range []string{"udp", "tcp"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: proto, Timeout: 2 * time.Second}
			m := new(dns.Msg)
			m.SetQuestion("www.example.org.", dns.TypeA)
			tick := time.NewTicker(20 * time.Millisecond) // a steady trickle of queries
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				r, _, err := c.Exchange(m, srv.Addr)
				queries.Add(1)
				if err != nil || firstA(r) != "192.0.2.1" {
					wrong.Add(1)
					lastWrong.Store(fmt.Sprintf("%s: %v %v", proto, err, r))
				}
			}
		}()
	}
	before := probes.Load()
	var flood []net.Conn
	for i := range 70 {
		flood = append(flood, operatorDial(t, fmt.Sprintf("127.0.1.%d", i+1), api, operatorPerClient)...)
	}
	fds := operatorFDs(t, srv.Cmd.Process.Pid)
	if c := operatorChecksFrom(t, "127.0.0.1", base)["web"]; !c.Healthy {
		t.Errorf("during the flood, from another client: web %+v", c)
	}
	if c := operatorChecksFrom(t, "127.0.1.1", base)["web"]; !c.Healthy {
		t.Errorf("during the flood, from a flooding client: web %+v", c)
	}
	held := operatorHeld(flood)
	// Probes (every 100 ms, one failure flips the check) keep running through it.
	waitUntil(t, 10*time.Second, "20 more probes during the flood", func() bool { return probes.Load() >= before+20 },
		func() string { return fmt.Sprintf("%d probes", probes.Load()-before) })
	close(stop)
	wg.Wait()

	if held > operatorMaxConns {
		t.Errorf("%d flood connections held, want at most %d", held, operatorMaxConns)
	}
	if fds > 400 {
		t.Errorf("%d open files during the flood, want far below the 1024 limit", fds)
	}
	if n := wrong.Load(); n > 0 || queries.Load() < 10 {
		t.Errorf("%d of %d DNS answers wrong during the flood; last: %v", n, queries.Load(), lastWrong.Load())
	}
	for _, c := range flood {
		c.Close()
	}
	c := apiChecks(t, base)["web"]
	if !c.Healthy || c.Failures != 0 || c.LastError != "" {
		t.Errorf("after the flood: web %+v, want healthy and never failed", c)
	}
	lines := regexp.MustCompile(`api \S+: (refused|closed) a connection`).FindAllString(srv.Output(), -1)
	if n := len(lines); n == 0 || n > 5 {
		t.Errorf("%d log lines of closed connections, want a few (one per 10 s):\n%s", n, srv.Output())
	}

	// A request whose headers never end is cut off after the 5 s header timeout; one
	// with 16 KiB of headers (the limit is 8) is refused.
	slow := operatorDial(t, "127.0.0.1", api, 1)[0]
	slow.SetReadDeadline(time.Now().Add(15 * time.Second)) // bounds the test only
	b, err := io.ReadAll(slow)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("a request with unfinished headers was still open after 15 s (read %q)", b)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/checks", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 16<<10))
	if resp, err := httpClient.Do(req); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("16 KiB of headers: %v %v, want 431", resp, err)
	} else {
		resp.Body.Close()
	}
}

// operatorHeadStatus sends a GET of /v1/checks to addr whose head (request line,
// header lines and the blank line ending them) is exactly size bytes, and returns
// the response's status code.
func operatorHeadStatus(t *testing.T, addr string, size int) int {
	t.Helper()
	head := "GET /v1/checks HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\nX-Pad: "
	pad := size - len(head) - len("\r\n\r\n")
	if pad < 0 {
		t.Fatalf("a head of %d bytes is too short for the request", size)
	}
	head += strings.Repeat("x", pad) + "\r\n\r\n"
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) // bounds the test only
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatalf("sending a head of %d bytes: %v", size, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a head of %d bytes: reading the response: %v", size, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The API's header limit is the documented 8 KiB, to the byte: a request whose
// head is 8 KiB is answered, one with 8 KiB + 1 gets 431, and so does one with
// 12 KiB, which net/http's own slack would let through.
func TestOperatorAPIHeaderLimitIsEightKiB(t *testing.T) {
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d
		record www.example.org. simple {
			A 192.0.2.1
		}
	}
}
`, port, apiPort), port, "www.example.org")
	api := fmt.Sprintf("127.0.0.1:%d", apiPort)
	for _, tc := range []struct {
		size, want int
	}{
		{8<<10 - 512, http.StatusOK},
		{8 << 10, http.StatusOK},
		{8<<10 + 1, http.StatusRequestHeaderFieldsTooLarge},
		{12 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		if got := operatorHeadStatus(t, api, tc.size); got != tc.want {
			t.Errorf("a head of %d bytes: status %d, want %d", tc.size, got, tc.want)
		}
	}
}
