package control

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// controlSeries counts the process's exported control_* series.
func controlSeries(t *testing.T) int {
	t.Helper()
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "coredns_healthroute_control_") {
			n += len(f.GetMetric())
		}
	}
	return n
}

// TestNoControlSeriesWithoutANode: a process without a control node exports no
// control_* series (a can_change of 0 would page as a lost quorum); a running node
// exports them, and they go when it closes.
func TestNoControlSeriesWithoutANode(t *testing.T) {
	if n := controlSeries(t); n != 0 {
		t.Fatalf("%d control_* series without a control node, want none", n)
	}
	n := openNode(t, Config{Name: "solo", Bind: freeAddr(t), Dir: t.TempDir()})
	waitFor(t, 10*time.Second, "the single voter leads", func() bool { return hasLeader(n) })
	if got := controlSeries(t); got < 5 {
		t.Errorf("%d control_* series with a running node, want the raft gauges and counters", got)
	}
	n.Close()
	if got := controlSeries(t); got != 0 {
		t.Errorf("%d control_* series after the node closed, want none", got)
	}
}
