package control

import (
	"errors"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// current is the process's running node, for the raft gauges.
var current atomic.Pointer[Node]

func opts(name, help string) prometheus.GaugeOpts {
	return prometheus.GaugeOpts{Namespace: plugin.Namespace, Subsystem: "healthroute", Name: name, Help: help}
}

func statusGauge(name, help string, f func(Status) float64) prometheus.GaugeFunc {
	return whileRunning(prometheus.NewGaugeFunc(opts(name, help), func() float64 {
		if n := current.Load(); n != nil {
			return f(n.Status())
		}
		return 0
	}))
}

// whileRunning registers c so that its series are exported only while a control
// node runs in the process: a server without controls has no control_* series (a
// can_change of 0 there would page as a lost quorum).
func whileRunning[C prometheus.Collector](c C) C {
	prometheus.MustRegister(runningOnly{c})
	return c
}

type runningOnly struct{ prometheus.Collector }

func (r runningOnly) Collect(ch chan<- prometheus.Metric) {
	if current.Load() != nil {
		r.Collector.Collect(ch)
	}
}

var (
	controlOn = whileRunning(prometheus.NewGaugeVec(opts("control_on",
		"Whether a routing control is on (1) or off (0) in the state this member last applied."), []string{"control"}))
	changesTotal = whileRunning(prometheus.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: "healthroute",
		Name: "control_changes_total", Help: "Changes of controls and overrides made through this member's API."}))
	refusalsTotal = whileRunning(prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: "healthroute",
		Name: "control_refusals_total", Help: "Changes through this member's API refused, by reason: the rule's name, no_quorum, or invalid (unknown control, check or rule)."},
		[]string{"reason"}))
	stateWriteFailures = whileRunning(prometheus.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: "healthroute",
		Name: "control_state_write_failures_total", Help: "Writes of the control state file (state.json) or of the index applied that failed."}))
	logWriteFailures = whileRunning(prometheus.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: "healthroute",
		Name: "control_log_write_failures_total", Help: "Writes of entries to this member's raft log that failed (a full disk): it does not stand for election meanwhile."}))
	votesRefused = whileRunning(prometheus.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: "healthroute",
		Name: "control_votes_refused_total", Help: "Vote requests this member refused because its raft log was lost and it has not yet applied the state it had."}))
	handshakeRefused = whileRunning(prometheus.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: "healthroute",
		Name: "control_connections_refused_total", Help: "Connections to the control port closed because they did not prove the fleet key."}))
	_ = statusGauge("control_raft_leader", "Whether this member is the raft leader (1) or not (0).",
		func(s Status) float64 { return b2f(s.State == raft.Leader.String()) })
	_ = statusGauge("control_raft_term", "This member's raft term.", func(s Status) float64 { return float64(s.Term) })
	_ = statusGauge("control_raft_commit_lag", "Raft entries committed but not yet applied on this member.",
		func(s Status) float64 { return float64(s.CommitIndex - min(s.Applied, s.CommitIndex)) })
	_ = statusGauge("control_can_change", "Whether a change through this member can reach a leader with a majority now (1) or is refused (0).",
		func(s Status) float64 { return b2f(s.CanChange) })
)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// observe sets the control gauges from st.
func observe(n *Node, st *State) {
	p := n.policy.Load()
	if p == nil {
		return
	}
	for _, c := range p.Controls {
		controlOn.WithLabelValues(c).Set(b2f(st.On(c)))
	}
}

// refusalRule is the reason label of a refused change.
func refusalRule(err error) string {
	var ref *Refusal
	switch {
	case errors.As(err, &ref) && ref.Rule != "":
		return ref.Rule
	case errors.Is(err, ErrNoQuorum):
		return "no_quorum"
	}
	return "invalid"
}

// CountInvalid counts a change refused before it reached the leader because it
// named an unknown control, check or rule (the API checks those first).
func CountInvalid() { refusalsTotal.WithLabelValues("invalid").Inc() }
