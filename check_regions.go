package healthroute

import (
	"slices"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/health"
)

// parseCheckRegions reads a check's `regions REGION...` option: where Route 53 probes
// the check from. It is kept on the check for placing checkers later; today every
// instance (every fleet member) probes the checks it is configured with, so it draws
// a warning.
func parseCheckRegions(c *caddy.Controller, s *health.Spec, a []string) error {
	if len(a) == 0 {
		return c.ArgErr()
	}
	for i, r := range a {
		if !isRegion(r) {
			return c.Errf("check %s: regions: invalid region '%s', expected region codes such as us-east-1", s.Name, r)
		}
		if slices.Contains(a[:i], r) {
			return c.Errf("check %s: regions: %s is given twice", s.Name, r)
		}
	}
	s.Regions = slices.Clone(a)
	log.Warningf("check %s: regions %v is kept but not used yet: every instance that has the check probes it", s.Name, a)
	return nil
}
