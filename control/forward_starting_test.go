package control

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// TestForwardToAStartingMemberIsRefused: the control port accepts before raft runs
// (a member restarting at the leader's address gets the changes forwarded to it);
// such a request is refused for want of a quorum, naming why, instead of reaching
// a raft that is not there (CI saw a member crash on it: nil pointer in
// serveForward).
func TestForwardToAStartingMemberIsRefused(t *testing.T) {
	n := &Node{cfg: Config{Name: "a", Voters: []Server{{ID: "a"}, {ID: "b"}, {ID: "c"}}}, ready: make(chan struct{})}
	client, server := net.Pipe()
	defer client.Close()
	done := make(chan struct{})
	go func() { defer close(done); n.serveForward(server) }()
	client.SetDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewEncoder(client).Encode(Request{Member: "b", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	var rep reply
	if err := json.NewDecoder(client).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Quorum || !strings.Contains(rep.Err, "is starting") || !strings.Contains(rep.Err, "2 of the 3 voters") {
		t.Errorf("reply %+v; want a no-quorum refusal saying the member is starting", rep)
	}
	<-done
}
