package operator

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestLimitListener: a connection over the per-client limit closes that client's
// oldest connection not being answered; over the total limit, the oldest of the
// client holding the most; with every one being answered, the new one is refused.
// A closed connection's slot is given back once.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := newErrorLog(time.Hour)
	logs.out = func(string) {}
	l := newLimitListener(inner, 4, 2, logs)
	defer l.Close()
	accepted := make(chan *limitConn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c.(*limitConn)
		}
	}()
	// dial connects from src; nil: refused before the dial returned.
	dial := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", inner.Addr().String())
		if errors.Is(err, syscall.ECONNRESET) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// accept returns the listener's next connection.
	accept := func() *limitConn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatal("a connection was not accepted in 5 s")
			return nil
		}
	}
	// closed reports whether the listener closed c: a read ends at once with an
	// error other than a timeout (the deadline only bounds the test).
	closed := func(c net.Conn) bool {
		if c == nil {
			return true
		}
		c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	open := func() int { l.mu.Lock(); defer l.mu.Unlock(); return l.open }

	a1, a2 := dial("127.0.0.2"), dial("127.0.0.2")
	accept()
	s2 := accept()
	a3 := dial("127.0.0.2") // over the client's 2: a1, the oldest, makes room
	s3 := accept()
	if !closed(a1) || closed(a2) || closed(a3) {
		t.Error("a third connection of one client did not replace its oldest")
	}
	s2.busy.Add(1) // both of the client's connections are being answered
	s3.busy.Add(1)
	if a4 := dial("127.0.0.2"); !closed(a4) || closed(a2) || closed(a3) {
		t.Error("with each of its connections answered, a client's third was not refused")
	}

	b1, b2 := dial("127.0.0.3"), dial("127.0.0.4")
	accept()
	accept() // 4 in all: .2 twice (answered), .3, .4
	c1 := dial("127.0.0.5")
	accept()
	if !closed(b1) || closed(b2) || closed(c1) {
		t.Error("over the total, the oldest idle connection of another client was not closed")
	}
	if n := open(); n != 4 {
		t.Errorf("%d connections counted, want 4", n)
	}
	s3.busy.Add(-1)
	s3.Close() // its slot comes back, once
	s3.Close()
	if n := open(); n != 3 {
		t.Errorf("after closing one twice: %d connections counted, want 3", n)
	}
}

func TestClientOf(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:80":                "192.0.2.7/32",
		"[::ffff:192.0.2.7]:80":       "192.0.2.7/32",
		"[2001:db8:1:2:3:4:5:6]:80":   "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:8053": "2001:db8:1:2::/64",
	} {
		a, err := net.ResolveTCPAddr("tcp", in)
		if err != nil {
			t.Fatal(err)
		}
		if got := clientOf(a).String(); got != want {
			t.Errorf("clientOf(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestErrorLogOncePerKindPerPeriod: one line per kind per period; what was held back is counted in the
// next line.
func TestErrorLogOncePerKindPerPeriod(t *testing.T) {
	var out strings.Builder
	now := time.Unix(0, 0)
	r := newErrorLog(10 * time.Second)
	r.now = func() time.Time { return now }
	r.out = func(msg string) { out.WriteString(msg + "\n") }
	for range 1000 {
		r.Errorf("refused", "refused %d", 1)
	}
	r.Errorf("http", "other kind")
	now = now.Add(10 * time.Second)
	r.Errorf("refused", "refused %d", 2)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "refused 1") || !strings.Contains(lines[1], "other kind") ||
		!strings.Contains(lines[2], "refused 2 (and 999 more like it") {
		t.Errorf("log:\n%s", out.String())
	}
}

// TestNotModified: a matching If-None-Match, weak or strong or in a list, gets 304.
func TestNotModified(t *testing.T) {
	for inm, want := range map[string]bool{`W/"a1"`: true, `"a1"`: true, `"x", W/"a1"`: true, `*`: true,
		`W/"a2"`: false, ``: false} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		w := httptest.NewRecorder()
		if got := notModified(w, r, `W/"a1"`); got != want || (got && w.Code != http.StatusNotModified) || w.Header().Get("ETag") != `W/"a1"` {
			t.Errorf("If-None-Match %q: %t %d, want %t", inm, got, w.Code, want)
		}
	}
}

// TestPacer: the burst passes at once; beyond it each unit waits its share of a
// second, and a request that would wait longer than paceWait is refused at once.
func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer()
		ctx := t.Context()
		start := time.Now()
		for range paceBurst {
			if !p.wait(ctx, 1) {
				t.Fatal("refused within the burst")
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the burst waited %s", d)
		}
		if !p.wait(ctx, 1) {
			t.Fatal("refused one unit past the burst")
		}
		if d, want := time.Since(start), time.Second/paceRate; d != want {
			t.Errorf("one unit past the burst waited %s, want %s", d, want)
		}
		if !p.wait(ctx, bodyUnits(10*paceUnit)) { // a 640 KiB body
			t.Fatal("refused a body within paceWait")
		}
		if d, want := time.Since(start), 11*time.Second/paceRate; d != want {
			t.Errorf("a 10-unit body waited until %s, want %s", d, want)
		}
		// Three clients at once, each after a full burst: the first two get theirs
		// within paceWait (2 s, 4 s); the third, due after 6 s, is refused at once.
		var granted, refused atomic.Int64
		var wg sync.WaitGroup
		before := time.Now()
		for range 3 {
			wg.Go(func() {
				if p.wait(ctx, paceBurst) {
					granted.Add(1)
				} else if time.Since(before) == 0 {
					refused.Add(1)
				}
			})
		}
		wg.Wait()
		if granted.Load() != 2 || refused.Load() != 1 {
			t.Errorf("three bursts at once: %d granted, %d refused at once; want 2 and 1", granted.Load(), refused.Load())
		}
	})
}

// TestGate: maxExpensive requests run at once; the next waits expensiveWait for a
// turn, and gets one when a running one leaves.
func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := make(gate, maxExpensive)
		for range maxExpensive {
			if err := g.enter(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if err := g.enter(t.Context()); !errors.Is(err, errBusy) || time.Since(start) != expensiveWait {
			t.Errorf("a third request: %v after %s, want busy after %s", err, time.Since(start), expensiveWait)
		}
		go func() { time.Sleep(time.Second); g.leave() }()
		start = time.Now()
		if err := g.enter(t.Context()); err != nil || time.Since(start) != time.Second {
			t.Errorf("with one leaving after 1s: %v after %s", err, time.Since(start))
		}
	})
}
