package control

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// handedOut is every address freeAddr returned in this process.
var handedOut sync.Map

// freeAddr returns a loopback address with a port free now, and one it has not
// returned before: the kernel may hand out a port again as soon as the listener
// that found it closes, and two voters given the same address cannot start (CI:
// "found duplicate address in configuration").
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := l.Addr().String()
		l.Close()
		if _, again := handedOut.LoadOrStore(a, true); !again {
			return a
		}
	}
	t.Fatal("no free loopback port that was not handed out before, in 100 tries")
	return ""
}

// waitFor polls cond every 10 ms until it holds, failing after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		<-tick.C
	}
	return time.Since(start)
}

var testPolicy = Policy{Rules: []Rule{atLeastOne}, Controls: []string{"east", "west"}, Checks: []string{"web"}}

func openNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.SetPolicy(testPolicy)
	t.Cleanup(n.Close)
	return n
}

func group(t *testing.T, size int) ([]Config, []*Node) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var voters []Server
	for i := range size {
		voters = append(voters, Server{ID: fmt.Sprintf("m%d", i), Addr: freeAddr(t)})
	}
	cfgs := make([]Config, size)
	nodes := make([]*Node, size)
	for i := range size {
		cfgs[i] = Config{Name: voters[i].ID, Bind: voters[i].Addr, Voters: voters, Dir: t.TempDir(), Key: key}
		nodes[i] = openNode(t, cfgs[i])
	}
	return cfgs, nodes
}

func hasLeader(nodes ...*Node) bool {
	for _, n := range nodes {
		if n.raft.State() == raft.Leader {
			return true
		}
	}
	return false
}

func TestSingleVoterKeepsStateAcrossRestarts(t *testing.T) {
	cfg := Config{Name: "solo", Bind: freeAddr(t), Dir: t.TempDir()}
	n := openNode(t, cfg)
	waitFor(t, 10*time.Second, "the single voter leads", func() bool { return hasLeader(n) })
	ctx := context.Background()
	if err := n.Change(ctx, Request{Token: "ops", Member: "solo", Set: map[string]bool{"east": false}, Override: map[string]string{"web": Unhealthy}}); err != nil {
		t.Fatal(err)
	}
	n.Close()
	var loaded *State
	n2, err := Open(cfg, func(s *State) {
		if loaded == nil {
			loaded = s
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n2.Close)
	if loaded == nil || loaded.On("east") || loaded.Overrides["web"] != false || len(loaded.Overrides) != 1 {
		t.Fatalf("state at reopen, before raft replays: %+v", loaded)
	}
	n2.SetPolicy(testPolicy)
	waitFor(t, 10*time.Second, "the reopened voter leads", func() bool { return hasLeader(n2) })
	if err := n2.Change(ctx, Request{Set: map[string]bool{"west": false}}); !errors.Is(err, ErrRefused) {
		t.Fatalf("after restart, turning west off too: %v, want the rule's refusal", err)
	}
	if st := n2.State(); st.On("east") || len(st.Audit) != 2 {
		t.Errorf("after restart: east on=%t, %d audit entries, want off and 2", st.On("east"), len(st.Audit))
	}
}

func TestChangeThroughAFollowerReachesEveryMember(t *testing.T) {
	_, nodes := group(t, 3)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	var follower *Node
	for _, n := range nodes {
		if n.raft.State() != raft.Leader {
			follower = n
		}
	}
	change(t, follower, Request{Token: "ops", Member: follower.Name(), Set: map[string]bool{"east": false}})
	waitFor(t, 2*time.Second, "every member applies it", func() bool {
		for _, n := range nodes {
			if n.State().On("east") {
				return false
			}
		}
		return true
	})
	st, err := follower.ReadConsistent(context.Background())
	if err != nil || st.On("east") {
		t.Fatalf("consistent read: %v %+v", err, st)
	}
	if a := st.Audit[len(st.Audit)-1]; a.Member != follower.Name() || a.Token != "ops" {
		t.Errorf("audit entry %+v, want member %s token ops", a, follower.Name())
	}
}

func TestMinorityRefusesNamingTheQuorum(t *testing.T) {
	_, nodes := group(t, 3)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	ctx := context.Background()
	change(t, nodes[0], Request{Set: map[string]bool{"east": false}})
	waitFor(t, 2*time.Second, "m2 applies it", func() bool { return !nodes[2].State().On("east") })
	nodes[0].Close()
	nodes[1].Close()
	var err error
	took := waitFor(t, 5*time.Second, "the survivor refuses", func() bool {
		err = nodes[2].Change(ctx, Request{Set: map[string]bool{"east": true}})
		return errors.Is(err, ErrNoQuorum)
	})
	t.Logf("refused %s after the others stopped: %v", took.Round(time.Millisecond), err)
	if !strings.Contains(err.Error(), "needs 2 of the 3 voters (m0, m1, m2)") {
		t.Errorf("error %q does not name the quorum", err)
	}
	if nodes[2].State().On("east") {
		t.Errorf("survivor: east on, want the state it had (off)")
	}
	waitFor(t, 2*time.Second, "the survivor says it cannot change", func() bool { return !nodes[2].Status().CanChange })
}

func TestConcurrentChangesNeverBreakTheRule(t *testing.T) {
	_, nodes := group(t, 3)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	ctx := context.Background()
	both := Request{Set: map[string]bool{"east": true, "west": true}}
	for round, tries := 0, 0; round < 30; tries++ {
		if tries == 100 {
			t.Fatalf("%d rounds of 100 without a leader change", round)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, c := range []string{"east", "west"} {
			wg.Go(func() { errs[i] = nodes[i].Change(ctx, Request{Set: map[string]bool{c: false}}) })
		}
		wg.Wait()
		var qe *QuorumError
		if errors.As(errs[0], &qe) || errors.As(errs[1], &qe) {
			// An election on a loaded machine (refused, or its outcome unknown):
			// the rule still holds, but the round says nothing of the race.
			if st, err := nodes[2].ReadConsistent(ctx); err == nil && !st.On("east") && !st.On("west") {
				t.Fatalf("round %d: both off after %v / %v", round, errs[0], errs[1])
			}
			change(t, nodes[2], both)
			continue
		}
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: east %v, west %v: want exactly one applied", round, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && !strings.Contains(err.Error(), "refused by rule one-region") {
				t.Fatalf("round %d: refusal %q does not name the rule", round, err)
			}
		}
		change(t, nodes[2], both)
		round++
	}
}

func TestDataDirectoryOfAnotherFleetOrDamaged(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Name: "solo", Bind: freeAddr(t), Dir: dir, Key: []byte("0123456789abcdef")}
	first := openNode(t, cfg)
	second := cfg
	second.Bind = freeAddr(t)
	if _, err := Open(second, nil); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("a directory held by a running node: %v", err)
	}
	first.Close()
	renamed := cfg
	renamed.Name = "other"
	if _, err := Open(renamed, nil); err == nil || !strings.Contains(err.Error(), "belongs to member solo, this member is other") {
		t.Errorf("another member's directory: %v", err)
	}
	other := cfg
	other.Key = []byte("fedcba9876543210")
	if _, err := Open(other, nil); err == nil || !strings.Contains(err.Error(), "belongs to another fleet") {
		t.Errorf("another fleet's key: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg, nil); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Errorf("corrupt state file: %v", err)
	}
	os.Remove(filepath.Join(dir, stateFile))
	if err := os.WriteFile(filepath.Join(dir, logFile), []byte("not a bolt database, long enough to be read as one page"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg, nil); err == nil || !strings.Contains(err.Error(), "raft log: "+filepath.Join(dir, logFile)+" is unreadable") {
		t.Errorf("corrupt raft log: %v", err)
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("x"), 0o600)
	cfg.Dir = foreign
	if _, err := Open(cfg, nil); err == nil || !strings.Contains(err.Error(), "not a healthroute control directory") {
		t.Errorf("a directory of other files: %v", err)
	}
}

func TestControlPortRefusesConnectionsWithoutTheKey(t *testing.T) {
	cfgs, nodes := group(t, 1)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	wrong := &mux{}
	wrong.setKeys([]byte("not the fleet key, 32 bytes long"), "m0", cfgs[0].Voters)
	c, err := wrong.dial(cfgs[0].Bind, kindForward, time.Second)
	if err == nil || !strings.Contains(err.Error(), "the listener is not voter m0") {
		t.Fatalf("dialing with the wrong key: %v, want the listener refused", err)
	}
	// Past the dialer's own check, the listener refuses the wrong key's certificate.
	wrong.voters["m0"] = memberKey(cfgs[0].Key, "m0").Public().(ed25519.PublicKey)
	if c, err = wrong.dial(cfgs[0].Bind, kindForward, time.Second); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, `{"set":{"east":false}}`+"\n")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err == nil {
		t.Fatal("the control port answered a connection with the wrong key")
	}
	if !nodes[0].State().On("east") {
		t.Fatal("a connection with the wrong key changed the state")
	}
}

func TestMetricsFollowTheState(t *testing.T) {
	cfg := Config{Name: "solo", Bind: freeAddr(t), Dir: t.TempDir()}
	n := openNode(t, cfg)
	waitFor(t, 10*time.Second, "the single voter leads", func() bool { return hasLeader(n) })
	refusedBefore := testutil.ToFloat64(refusalsTotal.WithLabelValues("one-region"))
	changesBefore := testutil.ToFloat64(changesTotal)
	ctx := context.Background()
	if err := n.Change(ctx, Request{Set: map[string]bool{"east": false}}); err != nil {
		t.Fatal(err)
	}
	if err := n.Change(ctx, Request{Set: map[string]bool{"west": false}}); err == nil {
		t.Fatal("west off as well was applied")
	}
	if v := testutil.ToFloat64(controlOn.WithLabelValues("east")); v != 0 {
		t.Errorf("control_on{control=east} = %v, want 0", v)
	}
	if v := testutil.ToFloat64(controlOn.WithLabelValues("west")); v != 1 {
		t.Errorf("control_on{control=west} = %v, want 1", v)
	}
	if d := testutil.ToFloat64(changesTotal) - changesBefore; d != 1 {
		t.Errorf("control_changes_total grew by %v, want 1", d)
	}
	if d := testutil.ToFloat64(refusalsTotal.WithLabelValues("one-region")) - refusedBefore; d != 1 {
		t.Errorf("control_refusals_total{reason=one-region} grew by %v, want 1", d)
	}
	st := n.Status()
	if st.State != raft.Leader.String() || !st.CanChange || st.Term == 0 {
		t.Errorf("status %+v, want the leader, able to change, in a term", st)
	}
}

// TestControlPortFloodLocksNoVoterOut: connections that never prove the key, from
// one address, more than the port holds from one client and in all, hold at most
// the per-client limit; a connection that proved the key from that same address
// stays open through the flood, and a voter from another address still gets in.
func TestControlPortFloodLocksNoVoterOut(t *testing.T) {
	cfgs, nodes := group(t, 1)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	addr := cfgs[0].Bind
	voter := &mux{}
	voter.setKeys(cfgs[0].Key, "m0", cfgs[0].Voters)
	from := func(ip string) net.Dialer { return net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}} }

	d := from("127.0.0.2")
	held, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// A voter's handshake, from the flood's address.
	if held, err = voter.client(held, addr, kindRaft, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	flood := make([]net.Conn, 0, maxConns+44)
	for range cap(flood) {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("flood connection %d: %v", len(flood), err)
		}
		defer c.Close()
		flood = append(flood, c)
	}
	// open reports whether the port still holds c at the deadline: a read finds
	// nothing to read rather than the end of the connection.
	open := func(c net.Conn, deadline time.Time) bool {
		c.SetReadDeadline(deadline)
		buf := make([]byte, 64)
		for {
			_, err := c.Read(buf)
			var ne net.Error
			if err != nil {
				return errors.As(err, &ne) && ne.Timeout()
			}
		}
	}
	var left atomic.Int32
	var wg sync.WaitGroup
	// Within the handshake timeout (2 s), and late enough that the accept loop has
	// taken (and refused the excess of) every flood connection on a loaded machine:
	// one still in the listen queue reads as open.
	deadline := time.Now().Add(1200 * time.Millisecond)
	for _, c := range flood { // all at once: each waits until the deadline
		wg.Go(func() {
			if open(c, deadline) {
				left.Add(1)
			}
		})
	}
	wg.Wait()
	if n := int(left.Load()); n > maxConnsPerClient || n == 0 {
		t.Errorf("%d of %d connections that never proved the key still held, want some, at most %d", n, len(flood), maxConnsPerClient)
	}
	if !open(held, time.Now().Add(300*time.Millisecond)) {
		t.Error("the flood closed a connection that had proved the key")
	}
	d3 := from("127.0.0.3")
	c, err := d3.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	other, err := voter.dial(addr, kindRaft, 2*time.Second)
	if err != nil {
		t.Fatalf("a voter's connection during the flood: %v", err)
	}
	other.Close()
}
