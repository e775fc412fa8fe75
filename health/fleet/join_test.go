package fleet

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestJoinTargetThatHangsDelaysNoOther: a join target where something accepts
// connections and never answers (a host whose process hangs) costs its own timeout
// (memberlist's TCP timeout, 30 s at the WAN profile), not the join of the targets
// listed after it: a member given it first joins the second at once. At the timers
// users get.
func TestJoinTargetThatHangsDelaysNoOther(t *testing.T) {
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn // accepted and never answered
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	// Before the members stop (cleanups run after deferred calls): a join still
	// waiting on the hung target ends at once.
	defer func() {
		hung.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()

	a := start(t, nil, member{name: "a", key: testKey})
	start0 := time.Now()
	b := start(t, nil, member{name: "b", key: testKey, join: []string{hung.Addr().String(), a.Addr()}})
	waitFor(t, 5*time.Second, "b, given the hung target first, sees a", func() bool {
		return slices.Contains(b.Members(), "a") && slices.Contains(a.Members(), "b")
	})
	t.Logf("b joined a %s after it started", time.Since(start0).Round(time.Millisecond))
	select {
	case <-accepted: // the hung target was tried too, and is still held
	case <-time.After(5 * time.Second):
		t.Fatal("the hung target was never dialled: the test did not test a hang")
	}
}
