package test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestControlsRelayOnAStoppedVotersAddress is the attack on the control port's old
// one-way handshake: with dns-c stopped, a process listening on dns-c's control
// address pipes every connection the voters make to it on to dns-b's control port,
// byte for byte, and (as a relay of the old handshake could) sends a forwarded
// change of its own on each. The voters' TLS handshake binds both ends to keys
// derived from the fleet key and the member name: the voter dialing dns-c refuses
// dns-b's certificate and logs it, so the relay carries no raft stream and no
// change; the state holds only the change made through the API.
func TestControlsRelayOnAStoppedVotersAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	f.kill(2)

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.ms[2].ctl))
	if err != nil {
		t.Fatal(err)
	}
	var relayed atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for range 1000 {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			relayed.Add(1)
			wg.Go(func() { relayTo(in, fmt.Sprintf("127.0.0.1:%d", f.ms[1].ctl)) })
		}
	})

	// Until dns-a and dns-b elect a leader among them (when dns-c led), a change is
	// forwarded to dns-c's address, where the relay is: refused (503), not applied.
	var code int
	var body string
	waitUntil(t, 15*time.Second, "east off through dns-a applies", func() bool {
		code, body = f.post(0, "/v1/controls/east?reason=drain+east", "off")
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Fatalf("east off through dns-a with dns-c's address relayed: %d %s", code, body)
		}
		return code == http.StatusOK
	}, func() string { return fmt.Sprintf("last reply %d %s\n%s", code, body, f.diag()) })
	// The follower applies the change at the leader's next heartbeat, not before
	// the acknowledgement: docs/controls.md promises every member within 1 s.
	fleetWait(t, time.Second, "dns-a and dns-b answer the secondary", func() bool { return f.allAnswer(ctlSecondary, 0, 1) }, f.diag)
	waitUntil(t, 15*time.Second, "the voters dial dns-c's address (the relay)", func() bool { return relayed.Load() >= 3 }, f.diag)
	waitUntil(t, 5*time.Second, "a voter logs the relay's refusal", func() bool {
		return strings.Contains(f.ms[0].srv.Output()+f.ms[1].srv.Output(), "the listener is not voter dns-c")
	}, f.diag)
	for i := range 2 {
		v, err := f.view(i, "")
		if err != nil || v.on("east") || !v.on("west") || len(v.Audit) != 1 {
			t.Errorf("%s: %+v %v; want east off, west on, one audit entry", f.ms[i].name, v, err)
		}
		if got := f.answer(i); got != ctlSecondary {
			t.Errorf("%s answers %s, want the secondary", f.ms[i].name, got)
		}
	}
}

// relayTo pipes in to target both ways, and after the first bytes from in writes
// a forwarded change of its own towards target, as the old handshake's relay did.
func relayTo(in net.Conn, target string) {
	defer in.Close()
	out, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	deadline := time.Now().Add(5 * time.Second)
	in.SetDeadline(deadline)
	out.SetDeadline(deadline)
	go func() {
		buf := make([]byte, 4096)
		n, err := in.Read(buf)
		if err != nil {
			out.Close()
			return
		}
		out.Write(buf[:n])
		out.Write([]byte("F" + `{"token":"relay","member":"dns-c","set":{"west":false,"east":false}}` + "\n"))
		io.Copy(out, in)
		out.Close()
	}()
	io.Copy(in, out)
}
