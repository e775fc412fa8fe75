// Package websocketdr is healthroute's WebSocket disaster-recovery example: a
// real-time service runs active-passive in two regions, healthroute answers the
// service name with the primary while a WebSocket heartbeat check passes and with the
// standby once it fails, and clients reconnect through the same name and resume their
// session by user ID. See README.md; the end-to-end test in this directory measures
// the failover.
package websocketdr

import (
	_ "embed"
	"strconv"
	"strings"
)

// Corefile is the example's Corefile: the failover record with WebSocket checks.
//
//go:embed Corefile
var Corefile string

// CorefilePrometheus is the alarm-style variant: the primary's health is a
// Prometheus alarm on a canary's metric.
//
//go:embed Corefile.prometheus
var CorefilePrometheus string

// The ports the Corefiles are written with.
const (
	DNSPort     = 10053
	ServicePort = 18443
	Name        = "chat.example.org."
)

// WithPorts returns corefile with its DNS and service ports replaced, so tests and
// the demo run the shipped Corefile on free ports.
func WithPorts(corefile string, dnsPort, servicePort int) string {
	return strings.NewReplacer(
		":"+strconv.Itoa(DNSPort), ":"+strconv.Itoa(dnsPort),
		":"+strconv.Itoa(ServicePort), ":"+strconv.Itoa(servicePort),
	).Replace(corefile)
}
