package fleet

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestIdleConnectionsToTheGossipPort opens 300 idle connections to a member's
// gossip port from another address (127.0.0.2), as anyone who can reach the port can
// without the key: at most StreamsPerPeer of them stay open, and only until
// FirstByte; meanwhile a real member joins and its reports count.
func TestIdleConnectionsToTheGossipPort(t *testing.T) {
	a := start(t, nil, member{name: "a", key: testKey})
	refused := testutil.ToFloat64(connectionsRefused.WithLabelValues("peer"))
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: time.Second}
	var conns []net.Conn
	for range 300 {
		c, err := d.Dial("tcp", a.Addr())
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	opened := time.Now()
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	// Every connection ends: the refused ones at once, the admitted ones at FirstByte.
	// Each is read from now, so its end is timed when it comes, however long the
	// join below takes on a loaded machine.
	var wg sync.WaitGroup
	ended := make([]time.Duration, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				ended[i] = -1
				return
			}
			ended[i] = time.Since(opened)
		}()
	}
	waitFor(t, 5*time.Second, "connections past the limit are refused", func() bool {
		return testutil.ToFloat64(connectionsRefused.WithLabelValues("peer"))-refused >= 300-defaultStreamsPerPeer
	})

	b := start(t, nil, member{name: "b", key: testKey, join: []string{a.Addr()}})
	a.Local("fp", status(false))
	b.Local("fp", status(false))
	waitFor(t, 10*time.Second, "a counts b while the idle connections are open", func() bool {
		b.Local("fp", status(false))
		return a.View("fp").Total == 2
	})

	wg.Wait()
	longest := time.Duration(0)
	for i, e := range ended {
		if e < 0 {
			t.Fatalf("connection %d still open after 10 s", i)
		}
		longest = max(longest, e)
	}
	t.Logf("the longest idle connection was closed %s after it was opened", longest.Round(time.Millisecond))
	if longest > defaultFirstByte+time.Second {
		t.Errorf("an idle connection stayed open %s, want about %s", longest, defaultFirstByte)
	}
}

// TestGarbageDatagramsLogSparingly sends 20,000 datagrams that are not gossip to a
// member: they are counted (as gossip errors and as dropped invalid datagrams), and
// at most logBurst lines are logged.
func TestGarbageDatagramsLogSparingly(t *testing.T) {
	f, err := New(Config{Name: "a", Key: testKey, Bind: netipLoopback0()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	f.logs.out = func(level int, msg string) {
		if level > levelDebug {
			mu.Lock()
			lines = append(lines, msg)
			mu.Unlock()
		}
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	before := testutil.ToFloat64(gossipErrors)
	droppedBefore := testutil.ToFloat64(droppedInvalid)
	c, err := net.Dial("udp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	junk := []byte(strings.Repeat("\x01garbage", 8))
	for i := range 20000 {
		if _, err := c.Write(junk); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	// Loopback may drop datagrams when the receiver's buffer is full: wait for a good part.
	waitFor(t, 10*time.Second, "the member counts the garbage", func() bool {
		return testutil.ToFloat64(gossipErrors)-before >= 1000
	})
	if d := testutil.ToFloat64(droppedInvalid) - droppedBefore; d < 1000 {
		t.Errorf("%.0f datagrams counted as dropped invalid, want the garbage counted there too", d)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%.0f gossip errors counted, %d lines logged", testutil.ToFloat64(gossipErrors)-before, len(lines))
	if len(lines) > logBurst+1 {
		t.Errorf("%d lines logged for garbage datagrams, want at most %d:\n%s", len(lines), logBurst+1, strings.Join(lines, "\n"))
	}
}

// TestRateLogSummarises: past the burst, lines are counted and the next window's
// first line says how many were not logged.
func TestRateLogSummarises(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &rateLog{now: func() time.Time { return now }}
	var got []string
	l.out = func(_ int, msg string) { got = append(got, msg) }
	for range 100 {
		io.WriteString(l, "[ERR] memberlist: Decrypt packet failed")
	}
	if len(got) != logBurst {
		t.Fatalf("%d lines in the first window, want %d", len(got), logBurst)
	}
	l.flush()
	if len(got) != logBurst {
		t.Fatal("a summary before the window ended")
	}
	now = now.Add(logWindow)
	l.flush()
	if len(got) != logBurst+1 || !strings.Contains(got[logBurst], "fleet: 95 more gossip errors and warnings in 10s not logged") {
		t.Errorf("summary: %q", got[logBurst:])
	}
}

func netipLoopback0() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:0") }
