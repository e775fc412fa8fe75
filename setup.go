package healthroute

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
)

const pluginName = "healthroute"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	h := New(cfg)
	c.OnStartup(h.OnStartup)   // acquire shared state, start probing; never in parse
	c.OnShutdown(h.OnShutdown) // on reload this runs after the new instance started
	dnsserver.GetConfig(c).AddPlugin(func(n plugin.Handler) plugin.Handler { h.Next = n; return h })
	return nil
}

// DefaultTTL is the answer TTL when the block sets none.
const DefaultTTL = 60

// parse reads one healthroute block into a validated Config. It starts nothing.
func parse(c *caddy.Controller) (*Config, error) {
	cfg := &Config{TTL: DefaultTTL, Regions: map[string]Region{}, Checks: map[string]*health.Spec{}}
	if !c.Next() { // "healthroute"
		return nil, c.ArgErr()
	}
	cfg.Zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
	var children map[*health.Spec][]childRef // calculated checks, resolved after the block
	var tablePos pos                         // where latency_table was given
	for c.NextBlock() {
		switch c.Val() {
		case "ttl":
			args := c.RemainingArgs()
			if len(args) != 1 {
				return nil, c.ArgErr()
			}
			n, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil || n > math.MaxInt32 {
				return nil, c.Errf("ttl: invalid value '%s', expected seconds from 0 to %d", args[0], math.MaxInt32)
			}
			cfg.TTL = uint32(n)
		case "fallthrough":
			cfg.Fall.SetZonesFromArgs(c.RemainingArgs())
		case "soa":
			if err := parseSOA(c, cfg); err != nil {
				return nil, err
			}
		case "ns":
			if err := parseNS(c, cfg); err != nil {
				return nil, err
			}
		case "max_probes":
			args := c.RemainingArgs()
			if len(args) != 1 {
				return nil, c.ArgErr()
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 || n > 1_000_000 {
				return nil, c.Errf("max_probes: invalid value '%s', expected a number from 1 to 1000000", args[0])
			}
			cfg.MaxInFlight = n
		case "latency_table":
			args := c.RemainingArgs()
			if len(args) != 1 {
				return nil, c.ArgErr()
			}
			path := rootPath(c, args[0])
			cfg.LatencyTable, tablePos = path, pos{c.File(), c.Line()}
		case "api":
			a, err := parseAPI(c)
			if err != nil {
				return nil, err
			}
			cfg.API = a
		case "fleet":
			if err := parseFleet(c, cfg); err != nil {
				return nil, err
			}
		case "region":
			r, err := parseRegion(c, c.RemainingArgs())
			if err != nil {
				return nil, err
			}
			if _, dup := cfg.Regions[r.Name]; dup {
				return nil, c.Errf("region '%s' is defined twice", r.Name)
			}
			cfg.Regions[r.Name] = r
		case "check":
			spec, kids, err := parseCheck(c, cfg)
			if err != nil {
				return nil, err
			}
			if kids != nil {
				if children == nil {
					children = map[*health.Spec][]childRef{}
				}
				children[spec] = kids
			}
			cfg.Checks[spec.Name] = spec
		case "record":
			rs, err := parseRecord(c, cfg)
			if err != nil {
				return nil, err
			}
			cfg.Records = append(cfg.Records, rs)
		default:
			return nil, c.Errf("unknown property '%s'", c.Val())
		}
	}
	if err := resolveChildren(cfg, children); err != nil {
		return nil, err
	}
	for _, s := range cfg.Checks {
		s.Seal()
	}
	if err := validate(cfg); err != nil {
		return nil, err
	}
	if err := authorityDefaults(cfg, time.Now()); err != nil {
		return nil, err
	}
	if cfg.LatencyTable != "" {
		if _, err := loadLatencyTable(cfg.LatencyTable, regionIDs(cfg)); err != nil {
			return nil, tablePos.errorf("latency_table: %v", err)
		}
	}
	return cfg, nil
}

// parseAPI reads `api ADDRESS [{ token_file FILE }]`.
func parseAPI(c *caddy.Controller) (*APIConfig, error) {
	args := c.RemainingArgs()
	if len(args) != 1 {
		return nil, c.ArgErr()
	}
	if _, port, err := net.SplitHostPort(args[0]); err != nil || port == "" {
		return nil, c.Errf("api: invalid address '%s', expected HOST:PORT such as 127.0.0.1:8053", args[0])
	}
	a := &APIConfig{Addr: args[0]}
	err := block(c, func(key string, v []string) error {
		switch key {
		case "token_file":
			if len(v) != 1 {
				return c.ArgErr()
			}
			path := rootPath(c, v[0])
			tok, err := os.ReadFile(path)
			if err != nil {
				return c.Errf("api: token_file: %v", err)
			}
			switch n := len(strings.TrimSpace(string(tok))); {
			case n == 0:
				return c.Errf("api: token_file: %s is empty, expected a token", path)
			case n < 16:
				log.Warningf("api: token_file: %s holds a token of %d characters; use at least 16 (openssl rand -base64 32)", path, n)
			}
			a.TokenFile = path
		default:
			return c.Errf("api: unknown property '%s'", key)
		}
		return nil
	})
	return a, err
}

func parseRegion(c *caddy.Controller, args []string) (Region, error) {
	if len(args) != 3 {
		return Region{}, c.ArgErr()
	}
	lat, err1 := strconv.ParseFloat(args[1], 64)
	lon, err2 := strconv.ParseFloat(args[2], 64)
	if err1 != nil || err2 != nil || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
		return Region{}, c.Errf("region %s: invalid coordinates '%s %s', expected LATITUDE (-90..90) LONGITUDE (-180..180)", args[0], args[1], args[2])
	}
	return Region{Name: args[0], Lat: lat, Lon: lon}, nil
}

// childRef is a calculated check's child, by name, with where it was named.
type childRef struct {
	name string
	pos  pos
}

// parseCheck reads `check NAME TYPE TARGET... [{ OPTIONS }]`.
func parseCheck(c *caddy.Controller, cfg *Config) (*health.Spec, []childRef, error) {
	args := c.RemainingArgs()
	if len(args) < 2 {
		return nil, nil, c.ArgErr()
	}
	name := args[0]
	if _, dup := cfg.Checks[name]; dup {
		return nil, nil, c.Errf("check '%s' is defined twice", name)
	}
	typ, ok := health.ParseType(args[1])
	if !ok {
		return nil, nil, c.Errf("check %s: unknown type '%s', expected http, https, tcp, websocket, grpc, calculated or prometheus", name, args[1])
	}
	s := &health.Spec{Name: name, Type: typ, Interval: health.DefaultInterval, Fails: health.DefaultFails}
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
	err := block(c, func(key string, a []string) error {
		one := func() (string, error) {
			if len(a) != 1 {
				return "", c.ArgErr()
			}
			return a[0], nil
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
			v, err := one()
			if err != nil {
				return err
			}
			min := health.MinInterval
			if key == "timeout" {
				min = time.Millisecond
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < min {
				return c.Errf("check %s: %s: invalid duration '%s', expected a duration of at least %s", name, key, v, min)
			}
			if key == "interval" {
				s.Interval = d
			} else {
				s.Timeout = d
			}
		case "failure_threshold", "recovery_threshold", "threshold":
			v, err := one()
			if err != nil {
				return err
			}
			lo, hi := 1, 10
			if key == "threshold" {
				if typ != health.Calculated {
					return c.Errf("check %s: threshold applies to calculated checks only", name)
				}
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
			v, err := one()
			if err != nil {
				return err
			}
			s.Host = v
		case "match", "send", "expect", "service":
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
			}
		case "status":
			v, err := one()
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
		case "query":
			if len(a) == 0 {
				return c.ArgErr()
			}
			s.Query = strings.Join(a, " ")
		case "insufficient_data":
			v, err := one()
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
		default:
			return c.Errf("check %s: unknown property '%s'", name, key)
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
	for _, only := range []struct {
		set   bool
		what  string
		types []health.Type
	}{
		{s.Match != "" || s.Status != [2]int{}, "match and status apply to", []health.Type{health.HTTP, health.HTTPS}},
		{s.Host != "", "host applies to", []health.Type{health.HTTP, health.HTTPS, health.WebSocket}},
		{s.Send != "" || s.Expect != "", "send and expect apply to", []health.Type{health.WebSocket}},
		{s.Service != "" || s.TLS, "service and tls apply to", []health.Type{health.GRPC}},
		{s.Query != "" || s.NoData != health.LastKnown, "query and insufficient_data apply to", []health.Type{health.Prometheus}},
	} {
		if only.set && !slices.Contains(only.types, typ) {
			names := make([]string, len(only.types))
			for i, t := range only.types {
				names[i] = t.String()
			}
			return nil, nil, c.Errf("check %s: %s %s checks only, not %s", name, only.what, strings.Join(names, " and "), typ)
		}
	}
	if typ == health.Calculated && s.Threshold > len(kids) {
		log.Warningf("check %s: threshold %d is more than its %d children: always unhealthy", name, s.Threshold, len(kids))
	}
	return s, kids, nil
}

// checkTarget validates a check's target for its type and returns it normalized.
func checkTarget(typ health.Type, t string) (string, error) {
	if typ == health.TCP {
		host, port, err := net.SplitHostPort(t)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
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
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("port '%s', expected 1-65535", p)
		}
	}
	return u.String(), nil
}

// resolveChildren links calculated checks to their children and refuses unknown
// children and cycles.
func resolveChildren(cfg *Config, children map[*health.Spec][]childRef) error {
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
	return nil
}

// block parses the optional "{ ... }" after a line's arguments. RemainingArgs
// stops in front of '{', so another NextArg on the same line can only be '{'. A
// block may also sit on one line, `{ token_file FILE }`: the '}' then arrives as the
// line's last argument.
func block(c *caddy.Controller, each func(key string, args []string) error) error {
	if !c.NextArg() {
		return nil
	}
	for c.Next() {
		if c.Val() == "}" {
			return nil
		}
		key := c.Val()
		args, closed := closing(c.RemainingArgs())
		if err := each(key, args); err != nil {
			return err
		}
		if closed {
			return nil
		}
	}
	return c.EOFErr()
}

// closing strips a block's closing '}' from the end of a line's arguments.
func closing(args []string) ([]string, bool) {
	if n := len(args); n > 0 && args[n-1] == "}" {
		return args[:n-1], true
	}
	return args, false
}

// rootPath resolves a file named in the Corefile: a relative path is relative to the
// server's root directory (the root plugin), as CoreDNS's file plugin reads it.
func rootPath(c *caddy.Controller, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dnsserver.GetConfig(c).Root, path)
}

// normalizeName checks that n is a domain name and returns it lower-cased and fully
// qualified. A leading "*." label (a wildcard owner) is allowed when wild is set.
func normalizeName(n string, wild bool) (string, bool) {
	if _, ok := dns.IsDomainName(n); !ok || n == "" {
		return "", false
	}
	n = plugin.Name(n).Normalize()
	if i := strings.IndexByte(n, '*'); i >= 0 && (!wild || i != 0 || !strings.HasPrefix(n, "*.") || strings.Count(n, "*") > 1) {
		return "", false
	}
	return n, true
}
