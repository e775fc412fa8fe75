package control

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// relay listens on addr and pipes every connection it accepts to target, both
// ways, byte for byte: the attack on a stopped voter's address that turned the old
// one-way handshake into an authenticated raft stream. It returns how many
// connections it relayed and how many bytes came back from target.
func relay(t *testing.T, addr, target string) (relayed, back *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	relayed, back = new(atomic.Int64), new(atomic.Int64)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			relayed.Add(1)
			wg.Go(func() {
				defer in.Close()
				out, err := net.DialTimeout("tcp", target, time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				deadline := time.Now().Add(5 * time.Second)
				in.SetDeadline(deadline)
				out.SetDeadline(deadline)
				go func() { io.Copy(out, in); out.Close() }()
				n, _ := io.Copy(in, out)
				back.Add(n)
			})
		}
	})
	return relayed, back
}

// TestRelayOnAStoppedVotersAddressGetsNoStream: with m2 stopped, a relay on its
// address pipes the voters' connections to m1. The dialer refuses m1's
// certificate (it is not m2's), so no raft stream or forwarded change goes through
// the relay, the state does not change, and the two live voters keep their quorum.
func TestRelayOnAStoppedVotersAddressGetsNoStream(t *testing.T) {
	cfgs, nodes := group(t, 3)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	nodes[2].Close()
	relayed, _ := relay(t, cfgs[2].Bind, cfgs[1].Bind)

	_, err := nodes[0].mux.dial(cfgs[2].Bind, kindRaft, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "the listener is not voter m2") {
		t.Fatalf("dialing m2's address through the relay: %v, want m1's certificate refused", err)
	}
	if _, err := nodes[1].mux.dial(cfgs[2].Bind, kindForward, 2*time.Second); err == nil {
		t.Fatal("a relay back to the dialer itself passed the handshake")
	}
	waitFor(t, 10*time.Second, "a leader among m0 and m1", func() bool { return hasLeader(nodes[0], nodes[1]) })
	change(t, nodes[0], Request{Token: "ops", Member: "m0", Set: map[string]bool{"east": false}}) // m2's address relayed
	// raft keeps trying m2 meanwhile: each of its connections went to the relay.
	waitFor(t, 10*time.Second, "raft dials m2's address", func() bool { return relayed.Load() >= 3 })
	waitFor(t, 2*time.Second, "m1 applies the change", func() bool { return !nodes[1].State().On("east") })
	for _, n := range nodes[:2] {
		if st := n.State(); st.On("east") || !st.On("west") || len(st.Audit) != 1 {
			t.Errorf("%s: east %t west %t, %d audit entries; want off, on, 1", n.Name(), st.On("east"), st.On("west"), len(st.Audit))
		}
	}
}

// raft dials a voter at the address this member's voters list gives it: a
// configuration copied from another member's log (whose voters list may reach
// the same voters through other addresses, proxies or NAT) does not change
// whose certificate a dial expects.
func TestRaftDialsVotersAtThisMembersAddresses(t *testing.T) {
	m := &mux{}
	voters := []Server{{ID: "m0", Addr: "127.0.0.1:1000"}, {ID: "m1", Addr: "127.0.0.1:1001"}}
	m.setKeys([]byte("0123456789abcdef0123456789abcdef"), "m0", voters)
	for _, v := range voters {
		if got, err := m.ServerAddr(raft.ServerID(v.ID)); err != nil || string(got) != v.Addr {
			t.Errorf("%s: %q %v, want %s", v.ID, got, err, v.Addr)
		}
	}
	if _, err := m.ServerAddr("m9"); err == nil {
		t.Error("an ID not in the voters list got an address")
	}
}
