package health

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// bodyWithMatch returns n filler bytes with "OK" written at offset at.
func bodyWithMatch(n, at int) []byte {
	b := bytes.Repeat([]byte("x"), n)
	copy(b[at:], "OK")
	return b
}

func compress(t testing.TB, enc string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "rawdeflate":
		w, _ = flate.NewWriter(&buf, flate.BestSpeed)
	}
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestHTTPStatusAndMatch(t *testing.T) {
	var mu sync.Mutex
	var followed int
	mux := http.NewServeMux()
	for _, code := range []int{200, 204, 301, 399, 404, 500, 503} {
		mux.HandleFunc(fmt.Sprintf("/%d", code), func(w http.ResponseWriter, r *http.Request) {
			if code >= 300 && code < 400 {
				w.Header().Set("Location", "/followed")
			}
			w.WriteHeader(code)
		})
	}
	mux.HandleFunc("/followed", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		followed++
		mu.Unlock()
		w.WriteHeader(500)
	})
	for _, at := range []int{0, 5118, 5119} {
		mux.HandleFunc(fmt.Sprintf("/at%d", at), func(w http.ResponseWriter, r *http.Request) {
			w.Write(bodyWithMatch(8000, at))
		})
		for _, enc := range []string{"gzip", "deflate", "rawdeflate"} {
			mux.HandleFunc(fmt.Sprintf("/%s/at%d", enc, at), func(w http.ResponseWriter, r *http.Request) {
				h := enc
				if enc == "rawdeflate" {
					h = "deflate"
				}
				w.Header().Set("Content-Encoding", h)
				w.Write(compress(t, enc, bodyWithMatch(8000, at)))
			})
		}
	}
	mux.HandleFunc("/br", func(w http.ResponseWriter, r *http.Request) {
		// Not decoded: the compressed bytes are searched as they are.
		w.Header().Set("Content-Encoding", "br")
		w.Write(compress(t, "gzip", bodyWithMatch(8000, 0)))
	})
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("OK")) })
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := range 10 {
			fmt.Fprintf(w, "chunk %d ", i)
			w.(http.Flusher).Flush()
		}
		w.Write([]byte("OK"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tests := []struct {
		path   string
		match  string
		status [2]int
		want   string // "" = pass
	}{
		{path: "/200"},
		{path: "/204"},
		{path: "/301"}, // a redirect passes and is not followed
		{path: "/399"},
		{path: "/404", want: "status 404"},
		{path: "/500", want: "status 500"},
		{path: "/503", want: "status 503"},
		{path: "/301", status: [2]int{200, 299}, want: "status 301"},
		{path: "/503", status: [2]int{503, 503}},
		{path: "/at0", match: "OK"},
		{path: "/at5118", match: "OK"},
		{path: "/at5119", match: "OK", want: "not found"},
		{path: "/at0", match: "ok", want: "not found"}, // case-sensitive
		{path: "/404", match: "OK", want: "status 404"},
		{path: "/gzip/at5118", match: "OK"},
		{path: "/gzip/at5119", match: "OK", want: "not found"},
		{path: "/deflate/at5118", match: "OK"},
		{path: "/deflate/at5119", match: "OK", want: "not found"},
		{path: "/rawdeflate/at5118", match: "OK"},
		{path: "/rawdeflate/at5119", match: "OK", want: "not found"},
		{path: "/br", match: "OK", want: "not found"},
		{path: "/short", match: "OK"},
		{path: "/short", match: "OKAY", want: "not found"},
		{path: "/chunked", match: "OK"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s match=%q status=%v", tc.path, tc.match, tc.status), func(t *testing.T) {
			spec := &Spec{Name: "t", Type: HTTP, Target: srv.URL + tc.path, Match: tc.match, Status: tc.status}
			err, _ := probeOnce(t, spec)
			wantResult(t, err, tc.want)
		})
	}
	if followed != 0 {
		t.Errorf("redirects followed %d times; want none", followed)
	}
}

func TestHTTPRequest(t *testing.T) {
	type seen struct{ host, uri, agent, sni string }
	got := make(chan seen, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{host: r.Host, uri: r.RequestURI, agent: r.UserAgent()}
		if r.TLS != nil {
			s.sni = r.TLS.ServerName
		}
		got <- s
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewUnstartedServer(handler)
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{expiredCert(t)}}
	secure.StartTLS()
	defer secure.Close()
	_, pport, _ := net.SplitHostPort(plain.Listener.Addr().String())
	_, sport, _ := net.SplitHostPort(secure.Listener.Addr().String())

	tests := []struct {
		name   string
		typ    Type
		target string
		host   string
		want   seen
	}{
		{"no name: the address", HTTP, plain.URL, "", seen{host: "127.0.0.1:" + pport, uri: "/"}},
		{"name off port 80", HTTP, plain.URL + "/health?x=1", "www.example.org", seen{host: "www.example.org:" + pport, uri: "/health?x=1"}},
		{"name with its own port", HTTP, plain.URL + "/h", "www.example.org:80", seen{host: "www.example.org:80", uri: "/h"}},
		{"https: SNI and Host, expired certificate", HTTPS, secure.URL + "/s", "example.org", seen{host: "example.org:" + sport, uri: "/s", sni: "example.org"}},
		{"https: no name, no SNI", HTTPS, secure.URL, "", seen{host: "127.0.0.1:" + sport, uri: "/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err, _ := probeOnce(t, &Spec{Name: "t", Type: tc.typ, Target: tc.target, Host: tc.host})
			wantResult(t, err, "")
			s := <-got
			tc.want.agent = testAgent
			if s != tc.want {
				t.Errorf("server saw %+v; want %+v", s, tc.want)
			}
		})
	}
}

func TestHTTPHostHeaderRules(t *testing.T) {
	tests := []struct {
		typ          Type
		target, host string
		wantHost     string
		wantURI      string
		wantSNI      string
	}{
		{HTTP, "http://192.0.2.1", "", "192.0.2.1", "/", ""},
		{HTTP, "http://192.0.2.1:80/x", "www.example.org", "www.example.org", "/x", ""},
		{HTTP, "http://192.0.2.1:8080/x", "www.example.org", "www.example.org:8080", "/x", ""},
		{HTTP, "http://192.0.2.1:8080", "", "192.0.2.1:8080", "/", ""},
		{HTTP, "http://[2001:db8::1]/", "", "[2001:db8::1]", "/", ""},
		{HTTP, "http://[2001:db8::1]:8080/", "", "[2001:db8::1]:8080", "/", ""},
		{HTTP, "http://www.example.org/a%20b", "", "www.example.org", "/a%20b", ""},
		{HTTPS, "https://192.0.2.1", "www.example.org", "www.example.org", "/", "www.example.org"},
		{HTTPS, "https://192.0.2.1:8443", "www.example.org", "www.example.org:8443", "/", "www.example.org"},
		{HTTPS, "https://192.0.2.1", "", "192.0.2.1", "/", ""},
		{HTTPS, "https://www.example.org", "", "www.example.org", "/", "www.example.org"},
	}
	for _, tc := range tests {
		t.Run(tc.target+" "+tc.host, func(t *testing.T) {
			c, err := newHTTPChecker(&Spec{Type: tc.typ, Target: tc.target, Host: tc.host}, testAgent)
			if err != nil {
				t.Fatal(err)
			}
			hc := c.(*httpChecker)
			req := string(hc.request)
			if want := "GET " + tc.wantURI + " HTTP/1.1\r\nHost: " + tc.wantHost + "\r\n"; !strings.HasPrefix(req, want) {
				t.Errorf("request %q; want it to start %q", req, want)
			}
			sni := ""
			if hc.tls != nil {
				sni = hc.tls.ServerName
			}
			if sni != tc.wantSNI {
				t.Errorf("SNI %q; want %q", sni, tc.wantSNI)
			}
		})
	}
}

// TestHTTPMisbehaving runs probes against endpoints that hang, reset, stall or flood:
// each must fail (or pass) within its limits and return promptly.
func TestHTTPMisbehaving(t *testing.T) {
	header := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
	wait := func(done <-chan struct{}, d time.Duration) {
		select {
		case <-done:
		case <-time.After(d):
		}
	}
	read := func(c net.Conn) { c.Read(make([]byte, 4096)) }
	flood := func(c net.Conn, done <-chan struct{}, prefix string, b byte) {
		io.WriteString(c, prefix)
		chunk := bytes.Repeat([]byte{b}, 32<<10)
		for i := 0; i < 1<<12; i++ { // at most 128 MiB: the probe closes long before
			select {
			case <-done:
				return
			default:
			}
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}
	tests := []struct {
		name  string
		serve func(c net.Conn, done <-chan struct{})
		match string
		want  string
	}{
		{"hang before status line", func(c net.Conn, done <-chan struct{}) { read(c); <-done }, "", "timeout"},
		{"hang during TLS-less headers", func(c net.Conn, done <-chan struct{}) {
			read(c)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-A: b\r\n")
			<-done
		}, "", "timeout"},
		{"reset on accept", func(c net.Conn, _ <-chan struct{}) { reset(c) }, "", "reset"},
		{"reset after request", func(c net.Conn, _ <-chan struct{}) { read(c); reset(c) }, "", "reading response"},
		{"status line without body, no match", func(c net.Conn, done <-chan struct{}) {
			read(c)
			io.WriteString(c, header)
			<-done // the body never comes: without match it is not awaited
		}, "", ""},
		{"body stalls before match", func(c net.Conn, done <-chan struct{}) {
			read(c)
			io.WriteString(c, header+"partial")
			<-done
		}, "OK", "timeout"},
		{"body stalls after match", func(c net.Conn, done <-chan struct{}) {
			read(c)
			io.WriteString(c, header+"it is OK")
			<-done
		}, "OK", ""},
		{"slow body", func(c net.Conn, done <-chan struct{}) {
			read(c)
			io.WriteString(c, header)
			wait(done, 2*time.Second)
			io.WriteString(c, "OK")
		}, "OK", "timeout"},
		{"reset mid-body", func(c net.Conn, _ <-chan struct{}) {
			read(c)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 9000\r\n\r\nxxxx")
			reset(c)
		}, "OK", "reading body"},
		{"header flood", func(c net.Conn, done <-chan struct{}) { read(c); flood(c, done, "HTTP/1.1 200 OK\r\nX-Flood: ", 'a') }, "", "headers longer"},
		{"body flood without match", func(c net.Conn, done <-chan struct{}) { read(c); flood(c, done, header, 'a') }, "OK", "not found"},
		{"body flood with match", func(c net.Conn, done <-chan struct{}) { read(c); flood(c, done, header+"OK", 'a') }, "OK", ""},
		{"garbage status line", func(c net.Conn, _ <-chan struct{}) { read(c); io.WriteString(c, "SSH-2.0-OpenSSH\r\n\r\n") }, "", "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawServer(t, tc.serve)
			spec := &Spec{Name: "t", Type: HTTP, Target: "http://" + addr + "/", Match: tc.match}
			c, err := NewChecker(spec, testAgent)
			if err != nil {
				t.Fatal(err)
			}
			hc := c.(*httpChecker)
			// Short limits where the case is a timeout; elsewhere room for the
			// server's goroutine to answer on a loaded machine.
			limit, bound := 2*time.Second, 4500*time.Millisecond
			if tc.want == "timeout" {
				limit, bound = 300*time.Millisecond, 1500*time.Millisecond
			}
			hc.connect, hc.response, hc.body = time.Second, limit, limit
			start := time.Now()
			err = c.Check(t.Context())
			took := time.Since(start)
			wantResult(t, err, tc.want)
			if took > bound {
				t.Errorf("probe took %s; want at most the status-line and body limits (%s each)", took, limit)
			}
		})
	}
}

// TestHTTPTimeouts checks the default phase limits and that timeout bounds the
// whole probe, against real slow endpoints.
func TestHTTPTimeouts(t *testing.T) {
	slow := func(d time.Duration) func(c net.Conn, done <-chan struct{}) {
		return func(c net.Conn, done <-chan struct{}) {
			c.Read(make([]byte, 4096))
			select {
			case <-done:
				return
			case <-time.After(d):
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")
		}
	}
	tests := []struct {
		name    string
		delay   time.Duration
		timeout time.Duration
		want    string
		maxTook time.Duration
	}{
		{"status line just in time (default 2 s)", 100 * time.Millisecond, 0, "", time.Second},
		{"timeout shorter than the answer", 800 * time.Millisecond, 200 * time.Millisecond, "timeout", 600 * time.Millisecond},
		{"timeout longer than the answer", 300 * time.Millisecond, time.Second, "", time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawServer(t, slow(tc.delay))
			err, took := probeOnce(t, &Spec{Name: "t", Type: HTTP, Target: "http://" + addr, Timeout: tc.timeout, Match: "OK"})
			wantResult(t, err, tc.want)
			if took > tc.maxTook {
				t.Errorf("probe took %s; want at most %s", took, tc.maxTook)
			}
		})
	}
	t.Run("closed port", func(t *testing.T) {
		err, _ := probeOnce(t, &Spec{Name: "t", Type: HTTP, Target: "http://" + coretest.ClosedPort(t)})
		wantResult(t, err, "connect")
	})
	t.Run("TLS handshake counts in the status-line limit", func(t *testing.T) {
		addr := rawServer(t, func(c net.Conn, done <-chan struct{}) { c.Read(make([]byte, 4096)); <-done })
		c, err := NewChecker(&Spec{Name: "t", Type: HTTPS, Target: "https://" + addr}, testAgent)
		if err != nil {
			t.Fatal(err)
		}
		c.(*httpChecker).response = 300 * time.Millisecond
		start := time.Now()
		err = c.Check(t.Context())
		wantResult(t, err, "tls handshake")
		if took := time.Since(start); took > time.Second {
			t.Errorf("probe took %s; want the 300ms status-line limit", took)
		}
	})
}

func TestBudget(t *testing.T) {
	tests := []struct {
		spec Spec
		want time.Duration
	}{
		{Spec{Type: HTTP}, 6 * time.Second},
		{Spec{Type: HTTPS, Match: "x"}, 8 * time.Second},
		{Spec{Type: HTTP, Timeout: time.Second}, time.Second},
		{Spec{Type: TCP}, 10 * time.Second},
		{Spec{Type: WebSocket, Interval: time.Second}, time.Second},
		{Spec{Type: GRPC, Interval: 30 * time.Second}, DefaultTimeout},
		{Spec{Type: Prometheus, Interval: 30 * time.Second, Timeout: 3 * time.Second}, 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.spec.Type.String(), func(t *testing.T) {
			if got := budget(&tc.spec); got != tc.want {
				t.Errorf("Budget = %s; want %s", got, tc.want)
			}
		})
	}
}
