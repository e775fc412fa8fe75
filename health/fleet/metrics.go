package fleet

import (
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
)

// The fleet's metrics are not registered here: an instance without a fleet block
// must not export fleet_* families (a "fleet lost members" alert would fire on every
// standalone server). The plugin registers Collectors when it starts a fleet.
var (
	membersAlive = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_members",
		Help:      "Gauge of the fleet members this instance can reach, itself included.",
	})
	reportsReceived = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_reports_received_total",
		Help:      "Counter of probe reports received from other fleet members that changed what this instance holds.",
	})
	overrides = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_quorum_overrides_total",
		Help:      "Counter of quorum decisions that differ from this instance's own probe result.",
	})
	gossipErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_gossip_errors_total",
		Help:      "Counter of errors and warnings of the gossip layer, such as datagrams or connections that do not decrypt or decode; at most 5 per 10 s are logged.",
	})
	connectionsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_connections_refused_total",
		Help:      "Counter of inbound gossip connections closed unread because a limit was reached, by limit: total or peer (one address).",
	}, []string{"limit"})
	staleReports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_stale_reports_total",
		Help:      "Counter of reports discarded as stale, by member: their probe grew older than their freshness bound, or they came from before the member stalled.",
	}, []string{"member"})
	assignedChecks = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_assigned_checks",
		Help:      "Gauge of the checks this instance is a checker of now (it probes them); the others it answers from their checkers' reports.",
	})
	reassignments = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_reassignments_total",
		Help:      "Counter of changes of a check's checkers as this instance computes them: a checker fell silent, left or joined.",
	})
	heartbeatsMissed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_heartbeats_missed_total",
		Help:      "Counter of each member's heartbeats that never arrived here, from the gaps between the send times of those that did. Gossip carries each beat several times, so a few are normal in a large fleet; a rise means datagrams are lost (a flood, a partition, a full socket buffer).",
	}, []string{"member"})
	clockOffset = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "healthroute",
		Name:      "fleet_clock_offset_seconds",
		Help:      "Gauge of how far each member's wall clock is ahead of this instance's (negative: behind), from its heartbeats; the quorum does not depend on it.",
	}, []string{"member"})
)

func init() {
	// Both limits exist at 0 from the start, so rate() and ratios work before the
	// first refusal.
	connectionsRefused.WithLabelValues("total")
	connectionsRefused.WithLabelValues("peer")
}

// Collectors returns the fleet's metric families, for the plugin to register once a
// fleet is configured.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{membersAlive, reportsReceived, overrides, gossipErrors, connectionsRefused, staleReports, heartbeatsMissed, clockOffset, datagramsDropped, assignedChecks, reassignments}
}

// memberLabel is a member's name as a label value. Names arrive in other members'
// messages, and the client library panics on a label value that is not valid UTF-8.
func memberLabel(name string) string { return strings.ToValidUTF8(name, "\uFFFD") }
