package connlimit

import (
	"errors"
	"net"
	"syscall"
	"testing"
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
	l := New(inner, "test", 4, 2, func(string, string, ...any) {})
	defer l.Close()
	accepted := make(chan *conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c.(*conn)
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
	accept := func() *conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatal("a connection was not accepted in 5 s")
			return nil
		}
	}
	// ended reports whether c ends (the listener closed it) within d: a read ends at
	// once with an error other than a timeout.
	ended := func(c net.Conn, d time.Duration) bool {
		if c == nil {
			return true
		}
		c.SetReadDeadline(time.Now().Add(d))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	// closed: the listener closes c, here at once or, for a connection it refuses
	// in its accept loop, as soon as that loop runs (5 s bounds a loaded machine);
	// held: c is still open after 300 ms.
	closed := func(c net.Conn) bool { return ended(c, 5*time.Second) }
	held := func(c net.Conn) bool { return !ended(c, 300*time.Millisecond) }
	open := func() int { l.mu.Lock(); defer l.mu.Unlock(); return l.open }

	a1, a2 := dial("127.0.0.2"), dial("127.0.0.2")
	accept()
	s2 := accept()
	a3 := dial("127.0.0.2") // over the client's 2: a1, the oldest, makes room
	s3 := accept()
	if !closed(a1) || !held(a2) || !held(a3) {
		t.Error("a third connection of one client did not replace its oldest")
	}
	s2.busy.Add(1) // both of the client's connections are being answered
	s3.busy.Add(1)
	if a4 := dial("127.0.0.2"); !closed(a4) || !held(a2) || !held(a3) {
		t.Error("with each of its connections answered, a client's third was not refused")
	}

	b1, b2 := dial("127.0.0.3"), dial("127.0.0.4")
	accept()
	accept() // 4 in all: .2 twice (answered), .3, .4
	c1 := dial("127.0.0.5")
	accept()
	if !closed(b1) || !held(b2) || !held(c1) {
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
