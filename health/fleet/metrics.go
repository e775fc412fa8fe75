package fleet

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	membersAlive = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_members",
		Help:      "Gauge of the fleet members this instance can reach, itself included.",
	})
	reportsReceived = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_reports_received_total",
		Help:      "Counter of probe reports received from other fleet members that changed what this instance holds.",
	})
	overrides = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_quorum_overrides_total",
		Help:      "Counter of quorum decisions that differ from this instance's own probe result.",
	})
	gossipErrors = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_gossip_errors_total",
		Help:      "Counter of errors and warnings of the gossip layer, such as datagrams or connections that do not decrypt or decode; at most 5 per 10 s are logged.",
	})
	connectionsRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_connections_refused_total",
		Help:      "Counter of inbound gossip connections closed unread because a limit was reached, by limit: total or peer (one address).",
	}, []string{"limit"})
	staleReports = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_stale_reports_total",
		Help:      "Counter of reports discarded as stale, by member: their probe grew older than their freshness bound, or they came from before the member stalled.",
	}, []string{"member"})
	clockOffset = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_clock_offset_seconds",
		Help:      "Gauge of how far each member's wall clock is ahead of this instance's (negative: behind), from its heartbeats; the quorum does not depend on it.",
	}, []string{"member"})
)
