package healthroute

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			lo, hi, d := health.MinInterval, maxInterval, &s.Interval
			if key == "timeout" {
				lo, hi, d = minTimeout, maxTimeout, &s.Timeout
			}
			if *d, err = time.ParseDuration(v); err != nil || *d < lo || *d > hi {
				return c.Errf("check %s: %s: invalid duration '%s', expected a duration from %s to %s", name, key, v, lo, hi)
			}
		case "failure_threshold", "recovery_threshold", "threshold":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			lo, hi := 1, 10
			if key == "threshold" {
				lo, hi = 0, 256
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return c.Errf("check %s: %s: invalid value '%s', expected a number from %d to %d", name, key, v, lo, hi)
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
		case "regions":
			return parseCheckRegions(c, s, a)
		case "checkers":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxCheckers {
				return c.Errf("check %s: checkers: invalid value '%s', expected a number of fleet members from 1 to %d", name, v, maxCheckers)
			}
			s.Checkers = n
		case "insufficient_data":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			switch v {
			case "healthy":
				s.NoData = health.NoDataHealthy
			case "unhealthy":
				s.NoData = health.NoDataUnhealthy
			case "last_known":
				s.NoData = health.LastKnown
			default:
				return c.Errf("check %s: insufficient_data: invalid value '%s', expected healthy, unhealthy or last_known", name, v)
			}
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

// resolveChildren links calculated checks to their children and refuses unknown
// children and cycles.
func resolveChildren(cfg *blockConfig, children map[*health.Spec][]childRef) error {
	order := slices.SortedFunc(maps.Keys(children), func(a, b *health.Spec) int {
		return children[a][0].pos.line - children[b][0].pos.line // Corefile order: stable errors
	})
	for _, s := range order {
		refs := children[s]
		for _, r := range refs {
			k, ok := cfg.Checks[r.name]
			if !ok {
				return r.pos.errorf("check %s: unknown child check '%s'", s.Name, r.name)
			}
			s.Children = append(s.Children, k)
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[*health.Spec]int{}
	var visit func(s *health.Spec, path []string) error
	visit = func(s *health.Spec, path []string) error {
		switch color[s] {
		case grey:
			return children[s][0].pos.errorf("check %s: calculated checks form a cycle: %s", s.Name, strings.Join(append(path, s.Name), " -> "))
		case black:
			return nil
		}
		color[s] = grey
		for _, k := range s.Children {
			if err := visit(k, append(path, s.Name)); err != nil {
				return err
			}
		}
		color[s] = black
		return nil
	}
	for _, s := range order {
		if err := visit(s, nil); err != nil {
			return err
		}
	}
	// Evaluating a calculated check walks its children recursively, a child shared by
	// several parents once per path: ladders of shared children grow exponentially.
	// Bound the sum over every check, counted the same way (saturating).
	size := map[*health.Spec]int{}
	var expand func(s *health.Spec) int
	expand = func(s *health.Spec) int {
		if n, ok := size[s]; ok {
			return n
		}
		n := 1
		for _, k := range s.Children {
			n = min(n+expand(k), maxCheckExpansion+1)
		}
		size[s] = n
		return n
	}
	total := len(cfg.Checks) - len(order)
	for _, s := range order {
		if total += expand(s); total > maxCheckExpansion {
			return children[s][0].pos.errorf("check %s: calculated checks expand to more than %d child evaluations (a child shared by several parents counts once per path), expected at most %d: share fewer children between nested calculated checks", s.Name, maxCheckExpansion, maxCheckExpansion)
		}
	}
	return nil
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
