package healthroute

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/health"
)

// parseCheck reads `check NAME TYPE TARGET... [{ OPTIONS }]`; args are the line's.
func parseCheck(c *caddy.Controller, cfg *blockConfig, args []string) (*health.Spec, []childRef, error) {
	if len(args) < 2 {
		return nil, nil, c.ArgErr()
	}
	name := args[0]
	if _, dup := cfg.Checks[name]; dup {
		return nil, nil, c.Errf("check '%s' is defined twice", name)
	}
	typ, ok := health.ParseType(args[1])
	if !ok {
		return nil, nil, c.Errf("check %s: unknown type '%s', expected http, https, tcp, websocket, grpc, calculated, prometheus or control", name, args[1])
	}
	s := &health.Spec{Name: name, Type: typ, Interval: health.DefaultInterval, Fails: health.DefaultFails, Origin: fmt.Sprintf("%s:%d", c.File(), c.Line())}
	if typ == health.Prometheus {
		s.Fails = 1 // the query already encodes how many failures make an alarm
	}
	var kids []childRef
	here := pos{c.File(), c.Line()}
	switch typ {
	case health.Calculated:
		if len(args) < 3 {
			return nil, nil, c.Errf("check %s: calculated needs at least one child check", name)
		}
		for _, k := range args[2:] {
			kids = append(kids, childRef{k, here})
		}
		s.Threshold = len(kids)
	case health.Control:
		if len(args) != 2 {
			return nil, nil, c.Errf("check %s: a control takes no target, expected 'check %s control'", name, name)
		}
	default:
		if len(args) != 3 {
			return nil, nil, c.ArgErr()
		}
		target, err := checkTarget(typ, args[2])
		if err != nil {
			return nil, nil, c.Errf("check %s: invalid target '%s': %v", name, args[2], err)
		}
		s.Target = target
	}
	recovery := 0
	opts := seen{}
	err := block(c, func(key string, a []string) error {
		types, known := checkOptions[key]
		if !known {
			return c.Errf("check %s: unknown property '%s'", name, key)
		}
		if typ == health.Control && key != "invert" {
			return c.Errf("check %s: %s does not apply to control checks (only invert does)", name, key)
		}
		if types != nil && !slices.Contains(types, typ) {
			return c.Errf("check %s: %s applies to %s checks only, not %s", name, key, typeList(types), typ)
		}
		if err := opts.once(c, "check "+name+": ", key); err != nil {
			return err
		}
		flag := func(f *bool) error {
			if len(a) != 0 {
				return c.ArgErr()
			}
			*f = true
			return nil
		}
		switch key {
		case "interval", "timeout":
			lo, hi, d := health.MinInterval, maxInterval, &s.Interval
			if key == "timeout" {
				lo, hi, d = minTimeout, maxTimeout, &s.Timeout
			}
			var err error
			if *d, err = durationArg(c, a, lo, hi, "check "+name+": "+key, fmt.Sprintf("a duration from %s to %s", lo, hi)); err != nil {
				return err
			}
		case "failure_threshold", "recovery_threshold", "threshold":
			lo, hi := 1, 10
			if key == "threshold" {
				lo, hi = 0, 256
			}
			n, err := intArg(c, a, lo, hi, "check "+name+": "+key, fmt.Sprintf("a number from %d to %d", lo, hi))
			if err != nil {
				return err
			}
			switch key {
			case "failure_threshold":
				s.Fails = n
			case "recovery_threshold":
				recovery = n
			default:
				s.Threshold = n
			}
		case "host":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			s.Host = v
		case "match", "send", "expect", "service", "query":
			if len(a) == 0 {
				return c.ArgErr()
			}
			v := strings.Join(a, " ")
			switch key {
			case "match":
				if len(v) > 255 {
					return c.Errf("check %s: match: string of %d bytes, expected at most 255", name, len(v))
				}
				s.Match = v
			case "send":
				s.Send = v
			case "expect":
				s.Expect = v
			case "service":
				s.Service = v
			case "query":
				s.Query = v
			}
		case "status":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			lo, hi, found := strings.Cut(v, "-")
			if !found {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || a < 100 || b > 599 || a > b {
				return c.Errf("check %s: status: invalid range '%s', expected CODE or LOW-HIGH within 100-599", name, v)
			}
			s.Status = [2]int{a, b}
		case "invert":
			return flag(&s.Invert)
		case "disabled":
			return flag(&s.Disabled)
		case "tls":
			return flag(&s.TLS)
		case "measure_latency":
			return flag(&s.MeasureLatency)
		case "regions":
			return parseCheckRegions(c, s, a)
		case "checkers":
			n, err := intArg(c, a, 1, maxCheckers, "check "+name+": checkers", fmt.Sprintf("a number of fleet members from 1 to %d", maxCheckers))
			if err != nil {
				return err
			}
			s.Checkers = n
		case "insufficient_data":
			v, err := enumArg(c, a, noDataValues, "check "+name+": insufficient_data", "healthy, unhealthy or last_known")
			if err != nil {
				return err
			}
			s.NoData = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if recovery > 0 {
		s.Passes = recovery
	} else {
		s.Passes = s.Fails
	}
	if typ == health.Prometheus && s.Query == "" {
		return nil, nil, c.Errf("check %s: prometheus needs a query", name)
	}
	if typ == health.Calculated && s.Threshold > len(kids) {
		log.Warningf("check %s: threshold %d is more than its %d children: always unhealthy", name, s.Threshold, len(kids))
	}
	return s, kids, nil
}

// typeList names check types for an error message: "http, https and websocket".
func typeList(types []health.Type) string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.String()
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// validPort reports whether p is a port number from 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// checkTarget validates a check's target for its type and returns it normalized.
func checkTarget(typ health.Type, t string) (string, error) {
	if typ == health.TCP {
		host, port, err := net.SplitHostPort(t)
		if err != nil || host == "" || !validPort(port) {
			return "", fmt.Errorf("expected ADDRESS:PORT (port 1-65535)")
		}
		return t, nil
	}
	schemes := map[health.Type][]string{
		health.HTTP: {"http"}, health.HTTPS: {"https"}, health.WebSocket: {"ws", "wss"},
		health.GRPC: {"grpc", "grpcs"}, health.Prometheus: {"http", "https"},
	}[typ]
	u, err := url.Parse(t)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("expected a URL %s://HOST[:PORT][/PATH]", schemes[0])
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return "", fmt.Errorf("scheme '%s', expected %s", u.Scheme, strings.Join(schemes, " or "))
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return "", fmt.Errorf("port '%s', expected 1-65535", p)
	}
	return u.String(), nil
}

// maxCheckers bounds a check's checkers: Route 53 has at most 8 checker regions of
// about 2 checkers each; more than 16 probes an interval buy no independence.
const maxCheckers = 16

// parseCheckRegions reads a check's `regions REGION...` option: the regions whose
// fleet members probe the check (Route 53's checker regions). Names are those of
// the members' `region`: lower-case letters, digits and dashes.
func parseCheckRegions(c *caddy.Controller, s *health.Spec, a []string) error {
	if len(a) == 0 {
		return c.ArgErr()
	}
	for i, r := range a {
		if !isRegionName(r) {
			return c.Errf("check %s: regions: invalid region '%s', expected names of lower-case letters, digits and dashes such as us-east-1, as fleet members give them in region", s.Name, r)
		}
		if slices.Contains(a[:i], r) {
			return c.Errf("check %s: regions: %s is given twice", s.Name, r)
		}
	}
	s.Regions = slices.Clone(a)
	return nil
}

// isRegionName reports whether s is a region name as fleet members and checks
// give it: 1 to 63 lower-case letters, digits and dashes.
func isRegionName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// noDataValues are the insufficient_data keywords.
var noDataValues = map[string]health.NoData{"healthy": health.NoDataHealthy, "unhealthy": health.NoDataUnhealthy, "last_known": health.LastKnown}
