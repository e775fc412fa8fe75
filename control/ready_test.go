package control

import (
	"context"
	"testing"

	"github.com/hashicorp/raft"
)

// A single voter leads when Open returns, with a port and without, new or
// reopened: a change right after it applies.
func TestSingleVoterLeadsWhenOpenReturns(t *testing.T) {
	for name, bind := range map[string]string{"with a control port": freeAddr(t), "in-process": ""} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Name: "solo", Bind: bind, Dir: t.TempDir()}
			for open := range 3 {
				n := openNode(t, cfg)
				if s := n.raft.State(); s != raft.Leader {
					t.Fatalf("open %d: %s when Open returned, want Leader", open, s)
				}
				if err := n.Change(context.Background(), Request{Token: "ops", Override: map[string]string{"web": Unhealthy}}); err != nil {
					t.Fatalf("open %d: a change right after Open: %v", open, err)
				}
				n.Close()
			}
		})
	}
}

// A change sent through a member of three as it starts, before the first election
// (raft's heartbeat timeout, 1-2 s, at the defaults), waits for it and applies.
func TestChangeAtStartWaitsForTheFirstElection(t *testing.T) {
	_, nodes := group(t, 3)
	if err := nodes[0].Change(context.Background(), Request{Token: "ops", Member: "m0", Set: map[string]bool{"east": false}}); err != nil {
		t.Fatalf("a change as the voters start: %v", err)
	}
}
