package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

const (
	// hostileCPUWindow is how long a server's CPU time is measured over.
	hostileCPUWindow = 10 * time.Second
	// hostileCPUBound is what one check may cost, as a share of one core.
	hostileCPUBound = 0.02
)

// One websocket check at a 1 s interval (the heartbeat the WebSocket
// disaster-recovery pattern uses, and the most probes per second a check makes in
// practice) against a hostile endpoint: a 100 MB frame followed by a close frame,
// or a flood of pings, each with and without a heartbeat to send. Each check fails
// (DNS answers the secondary), and the whole CoreDNS process, probing it, costs
// under 2% of a core over 10 s. A well-behaved endpoint is measured the same way
// for comparison. The health package's TestWebSocketHostileTargetsFailWithinReadBudget
// runs the same endpoints at the default interval and timeout.
func TestProbingHostileWebSocketCheckFailsCheaply(t *testing.T) {
	coretest.Binary(t) // built before any clock starts
	echo := echoWS(t)
	t.Run("well-behaved endpoint", func(t *testing.T) {
		share := hostileCheckCPU(t, echo.url, "send ping\n\t\t\texpect pong", "192.0.2.1", echo.conns.Load)
		t.Logf("well-behaved endpoint: %.2f%% of a core", 100*share)
	})
	for _, tc := range []struct {
		name string
		how  coretest.Hostile
		opts string
	}{
		{"100 MB frame then close, closing handshake only", coretest.BigFrameThenClose, ""},
		{"100 MB frame then close, heartbeat", coretest.BigFrameThenClose, "send ping\n\t\t\texpect pong"},
		{"ping flood, closing handshake only", coretest.PingFlood, ""},
		{"ping flood, heartbeat", coretest.PingFlood, "send ping\n\t\t\texpect pong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := coretest.HostileWS(t, tc.how)
			share := hostileCheckCPU(t, "ws://"+srv.Addr+"/", tc.opts, "198.51.100.1", srv.Conns.Load)
			t.Logf("%s: %.2f%% of a core", tc.name, 100*share)
			if share >= hostileCPUBound {
				t.Errorf("the check cost %.2f%% of a core; want under %.0f%%", 100*share, 100*hostileCPUBound)
			}
		})
	}
}

// hostileCheckCPU starts CoreDNS with one websocket check on url (with opts), waits
// until www.example.org answers want (192.0.2.1 while the check passes,
// 198.51.100.1 once it has failed), and returns the share of a core the process
// used over hostileCPUWindow. probes counts the endpoint's connections: the check
// must have kept probing through the window.
func hostileCheckCPU(t *testing.T, url, opts, want string, probes func() int64) float64 {
	t.Helper()
	port := coretest.FreePort(t)
	srv := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		check w websocket %s {
			interval 1s
			%s
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check w
			secondary A 198.51.100.1
		}
	}
}`, port, url, opts), port, "www.example.org")
	// Three failures at 1 s, each within its 1 s timeout, plus the start.
	srv.WaitFor(t, "www.example.org", dns.TypeA, 10*time.Second, "answer "+want, func(m *dns.Msg) bool {
		return len(m.Answer) == 1 && strings.Contains(m.Answer[0].String(), want)
	})
	pid := srv.Cmd.Process.Pid
	p0, c0, t0 := probes(), coretest.CPU(t, pid), time.Now()
	// Waits out the window on the probes it should see, not on a sleep.
	coretest.WaitUntil(t, hostileCPUWindow+2*time.Second, "probes through the window",
		func() bool { return time.Since(t0) >= hostileCPUWindow }, func() string { return "" })
	used, took, n := coretest.CPU(t, pid)-c0, time.Since(t0), probes()-p0
	if min := int64(hostileCPUWindow/time.Second) - 3; n < min {
		t.Errorf("%d probes in %s; want at least %d at a 1 s interval", n, took.Round(time.Millisecond), min)
	}
	if m := srv.Query(t, "www.example.org", dns.TypeA); len(m.Answer) != 1 || !strings.Contains(m.Answer[0].String(), want) {
		t.Errorf("after the window: %v; want %s", m.Answer, want)
	}
	return used.Seconds() / took.Seconds()
}

type echoServer struct {
	url   string
	conns atomic.Int64
}

// echoWS is a well-behaved WebSocket endpoint: it answers "ping" with "pong" and
// completes the closing handshake.
func echoWS(t *testing.T) *echoServer {
	e := &echoServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		e.conns.Add(1)
		for range 10 {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if string(msg) == "ping" {
				msg = []byte("pong")
			}
			if c.Write(r.Context(), typ, msg) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	e.url = "ws" + strings.TrimPrefix(srv.URL, "http") + "/"
	return e
}
