package control

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestFirstElectionNotWarned: the election warning of a member that never knew a
// leader (every start) is left out; after a leader was known, and any other
// warning, is kept.
func TestFirstElectionNotWarned(t *testing.T) {
	const msg = "heartbeat timeout reached, starting election"
	for _, c := range []struct {
		what  string
		level hclog.Level
		msg   string
		args  []any
		want  bool
	}{
		{"at start", hclog.Warn, msg, []any{"last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID("")}, true},
		{"a leader lost", hclog.Warn, msg, []any{"last-leader-addr", raft.ServerAddress("127.0.0.1:7947"), "last-leader-id", raft.ServerID("dns-a")}, false},
		{"another warning", hclog.Warn, "failed to contact", []any{"last-leader-id", raft.ServerID("")}, false},
		{"an error", hclog.Error, msg, []any{"last-leader-id", raft.ServerID("")}, false},
	} {
		if got := firstElection(c.level, c.msg, c.args...); got != c.want {
			t.Errorf("%s: left out %t, want %t", c.what, got, c.want)
		}
	}
}
