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
