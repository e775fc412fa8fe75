package fleet

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTransportRejectsGarbageWithoutAllocating: a datagram that does not authenticate
// with the key (or, in the clear, is not a gossip message) is refused before memberlist
// sees it, and refusing it allocates nothing once the scratch buffer has grown.
func TestTransportRejectsGarbageWithoutAllocating(t *testing.T) {
	keyed := &transport{}
	tr, err := newTransport(netip.MustParseAddrPort("127.0.0.1:0"), testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown() })
	keyed.gcm = tr.gcm
	clear := &transport{}

	junk := make([]byte, 1200)
	for i := range junk {
		junk[i] = byte(rand.Uint32())
	}
	junk[0] = 1 // passes the version check: only authentication refuses it
	var scratch []byte
	var ok bool
	if ok, scratch = keyed.member(junk, scratch); ok {
		t.Fatal("random bytes authenticated with the key")
	}
	if allocs := testing.AllocsPerRun(100, func() { ok, scratch = keyed.member(junk, scratch) }); allocs != 0 || ok {
		t.Errorf("refusing a garbage datagram: %v allocations (ok %t), want 0", allocs, ok)
	}
	for _, tc := range []struct {
		b    []byte
		want bool
	}{{nil, false}, {[]byte{200, 1, 2}, false}, {[]byte{0}, true}, {[]byte{13, 0}, true}, {[]byte{14}, false}} {
		if got, _ := clear.member(tc.b, nil); got != tc.want {
			t.Errorf("in the clear, datagram %v: member %t, want %t", tc.b, got, tc.want)
		}
	}
}

// lastHeard returns when f last heard from member name.
func lastHeard(f *Fleet, name string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.peers[name]; p != nil {
		return p.heard
	}
	return time.Time{}
}

// TestGossipFloodKeepsHeartbeats floods one member of three, at the default timers,
// with 20,000 random datagrams a second for 5 seconds at its gossip port (no key is
// needed to send them): the flood is dropped as invalid, and throughout it the member
// keeps hearing every other member's heartbeats (1 s apart by default).
func TestGossipFloodKeepsHeartbeats(t *testing.T) {
	ms := cluster(t, nil, 3, member{})
	target := ms[0]
	// Heartbeats start once the members know each other.
	waitFor(t, 10*time.Second, "the first heartbeats", func() bool {
		return !lastHeard(target, "m01").IsZero() && !lastHeard(target, "m02").IsZero()
	})
	c, err := net.Dial("udp", target.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	droppedBefore := testutil.ToFloat64(droppedInvalid)

	const rate, seconds = 20000, 5
	stop := make(chan struct{})
	sent := make(chan int)
	go func() {
		junk := make([]byte, 512)
		n := 0
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for n < rate*seconds {
			select {
			case <-stop:
				sent <- n
				return
			case <-tick.C:
			}
			for range rate / 1000 {
				for i := range junk {
					junk[i] = byte(rand.Uint32())
				}
				c.Write(junk)
				n++
			}
		}
		sent <- n
	}()
	deadline := time.Now().Add((seconds + 5) * time.Second)
	worst := time.Duration(0)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var total int
loop:
	for {
		select {
		case total = <-sent:
			break loop
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			close(stop)
			total = <-sent
			break
		}
		for _, name := range []string{"m01", "m02"} {
			worst = max(worst, time.Since(lastHeard(target, name)))
		}
	}
	dropped := testutil.ToFloat64(droppedInvalid) - droppedBefore
	t.Logf("%d datagrams sent, %.0f dropped as invalid; longest silence of a member during the flood: %v", total, dropped, worst)
	if dropped < float64(total)/10 {
		t.Errorf("only %.0f of %d datagrams reached the transport's check", dropped, total)
	}
	// A heartbeat every second: two missed in a row would be a loss.
	if worst > 2500*time.Millisecond {
		t.Errorf("during the flood a member went unheard for %v, more than two heartbeats", worst)
	}
}

// TestTransportPacesEachSource: one address hands memberlist at most packetsPerSource
// datagrams in a second; another address has its own allowance, and the next second
// starts afresh.
func TestTransportPacesEachSource(t *testing.T) {
	tr := &transport{counts: map[netip.Addr]int{}}
	a, b := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	now := time.Unix(1000, 0)
	for i := range packetsPerSource {
		if !tr.pace(a, now) {
			t.Fatalf("datagram %d of a source within its pace was refused", i+1)
		}
	}
	if tr.pace(a, now.Add(500*time.Millisecond)) {
		t.Errorf("datagram %d within one second from one source was handed over", packetsPerSource+1)
	}
	if !tr.pace(b, now.Add(500*time.Millisecond)) {
		t.Error("another source was refused by the first one's pace")
	}
	if !tr.pace(a, now.Add(time.Second)) {
		t.Error("the next second did not start afresh")
	}
}
