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
)
