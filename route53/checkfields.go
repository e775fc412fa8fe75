package route53

import (
	"slices"
	"strings"
)

// checkFields returns the check options of the health check fields that are not
// about what is probed: Regions becomes `regions` (in a fleet, members of those
// regions probe the check; with a warning), MeasureLatency becomes `measure_latency`
// on a check that probes an endpoint, and the HealthThreshold edge cases are
// named in one (the table in
// docs/traffic-flow.md lists every field).
func (c *converter) checkFields(hc *HealthCheck) []string {
	cfg := &hc.HealthCheckConfig
	var opts []string
	if len(cfg.Regions) > 0 && cfg.Type != "CALCULATED" {
		rs := slices.Clone(cfg.Regions)
		for i, r := range rs {
			rs[i] = strings.ToLower(r)
		}
		opts = append(opts, "regions "+strings.Join(rs, " "))
		c.warnf("health check %s: Regions %s kept as `regions`: in a fleet only members whose region is one of these probe it (give members these region codes); a lone instance probes it itself", hc.Id, strings.Join(rs, ", "))
	}
	if cfg.MeasureLatency != nil && *cfg.MeasureLatency {
		if cfg.Type == "CALCULATED" {
			c.warnf("health check %s: MeasureLatency applies to checks that probe an endpoint only; left out", hc.Id)
		} else {
			opts = append(opts, "measure_latency")
		}
	}
	if cfg.InsufficientDataHealthStatus != "" {
		c.warnf("health check %s: InsufficientDataHealthStatus applies to CloudWatch alarm checks only; left out", hc.Id)
	}
	if t := cfg.HealthThreshold; cfg.Type == "CALCULATED" && t != nil {
		switch n := int64(len(cfg.ChildHealthChecks)); {
		case *t == 0:
			c.warnf("health check %s: HealthThreshold 0: always healthy, as on Route 53", hc.Id)
		case *t > n:
			c.warnf("health check %s: HealthThreshold %d is more than its %d children: always unhealthy, as on Route 53", hc.Id, *t, n)
		}
	}
	return opts
}

// noDataUnhealthy reports whether a CloudWatch alarm check, which healthroute never
// has data for, is unhealthy in Route 53 without data (InsufficientDataHealthStatus
// Unhealthy); Healthy and LastKnownStatus (with no status known yet) are healthy.
func (c *converter) noDataUnhealthy(hc *HealthCheck) bool {
	cfg := &hc.HealthCheckConfig
	if cfg.MeasureLatency != nil && *cfg.MeasureLatency {
		c.warnf("health check %s: MeasureLatency applies to checks that probe an endpoint only; left out", hc.Id)
	}
	switch cfg.InsufficientDataHealthStatus {
	case "", "Healthy", "LastKnownStatus":
	case "Unhealthy":
		return cfg.Type == "CLOUDWATCH_METRIC"
	default:
		c.warnf("health check %s: InsufficientDataHealthStatus %q is not Healthy, Unhealthy or LastKnownStatus; taken as Healthy", hc.Id, cfg.InsufficientDataHealthStatus)
	}
	return false
}
