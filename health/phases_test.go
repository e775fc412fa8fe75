package health

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestProbePhases runs one probe of each type against a real server on loopback and
// checks the phases it records: a connect for every type, a TLS handshake for the
// secure ones, a first byte for those with a response, each within the total.
func TestProbePhases(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer web.Close()
	webTLS := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer webTLS.Close()
	ws, _ := wsServer(t, true, func(c *websocket.Conn, r *http.Request) { c.Read(r.Context()) })
	plainGRPC, _ := grpcServer(t, false, false)
	secureGRPC, _ := grpcServer(t, true, false)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tests := []struct {
		spec           *Spec
		tls, firstByte bool
	}{
		{&Spec{Name: "http", Type: HTTP, Target: web.URL}, false, true},
		{&Spec{Name: "https", Type: HTTPS, Target: webTLS.URL}, true, true},
		{&Spec{Name: "tcp", Type: TCP, Target: tcp.Addr().String()}, false, false},
		{&Spec{Name: "wss", Type: WebSocket, Target: "wss" + strings.TrimPrefix(ws.URL, "https")}, true, true},
		{&Spec{Name: "grpc", Type: GRPC, Target: "grpc://" + plainGRPC}, false, true},
		{&Spec{Name: "grpcs", Type: GRPC, Target: "grpcs://" + secureGRPC}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.spec.Name, func(t *testing.T) {
			c, err := NewChecker(tc.spec, testAgent)
			if err != nil {
				t.Fatal(err)
			}
			var s Scheduler
			took, ph, err := s.probe(t.Context(), c, tc.spec)
			if err != nil {
				t.Fatalf("probe: %v", err)
			}
			if ph.Total != took || took <= 0 {
				t.Errorf("total %v, want the probe's duration %v", ph.Total, took)
			}
			if ph.Connect <= 0 || ph.Connect > took {
				t.Errorf("connect %v, want within (0, %v]", ph.Connect, took)
			}
			if got := ph.TLS > 0 && ph.TLS <= took; got != tc.tls {
				t.Errorf("tls %v (total %v), want measured: %v", ph.TLS, took, tc.tls)
			}
			if got := ph.FirstByte > 0 && ph.FirstByte <= took; got != tc.firstByte {
				t.Errorf("first byte %v (total %v), want measured: %v", ph.FirstByte, took, tc.firstByte)
			}
			if tc.firstByte && ph.FirstByte < ph.Connect+ph.TLS {
				t.Errorf("first byte at %v, before connect %v and TLS %v ended", ph.FirstByte, ph.Connect, ph.TLS)
			}
			n := 0
			ph.Each(func(string, time.Duration) { n++ })
			if want := 2 + btoi(tc.tls) + btoi(tc.firstByte); n != want {
				t.Errorf("Each visited %d phases, want %d", n, want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
