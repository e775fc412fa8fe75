package healthroute

import (
	"math"
	"strconv"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/routing"
	"github.com/healthroute/healthroute/view"
)

// defaultTTL is the answer TTL when the block sets none.
const defaultTTL = 60

// parse reads the healthroute directive of one server block into a validated
// blockConfig. It starts nothing. node is the running replicated state's node, nil
// when none runs: route53_api reads the record sets it manages from it.
func parse(c *caddy.Controller, node *control.Node) (*blockConfig, error) {
	cfg := &blockConfig{Config: routing.Config{TTL: defaultTTL, Regions: map[string]routing.Region{}, Checks: map[string]*health.Spec{}}}
	cfg.state().node = node
	if !c.Next() { // "healthroute"
		return nil, c.ArgErr()
	}
	first := c.Line()
	cfg.Zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
	var children map[*health.Spec][]childRef // calculated checks, resolved after the block
	var tablePos pos                         // where latency_table was given
	checkPos := map[string]pos{}             // where each control check was given
	cfg.controlsDir = rootPath(c, defaultControlsDir)
	opts := seen{}
	err := block(c, func(key string, args []string) error {
		switch key {
		case "ttl", "fallthrough", "soa", "ns", "max_probes", "max_file_size", "latency_table", "api", "webhook":
			if err := opts.once(c, "", key); err != nil {
				return err
			}
		}
		switch key {
		case "ttl":
			v, err := oneArg(c, args)
			if err != nil {
				return err
			}
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n > math.MaxInt32 {
				return c.Errf("ttl: invalid value '%s', expected seconds from 0 to %d", v, math.MaxInt32)
			}
			cfg.TTL = uint32(n)
		case "fallthrough":
			cfg.Fall.SetZonesFromArgs(args)
		case "soa":
			return parseSOA(c, cfg, args)
		case "ns":
			return parseNS(c, cfg, args)
		case "max_probes":
			n, err := intArg(c, args, 1, 1_000_000, "max_probes", "a number from 1 to 1000000")
			if err != nil {
				return err
			}
			cfg.MaxInFlight = n
		case "max_file_size":
			v, err := oneArg(c, args)
			if err != nil {
				return err
			}
			n, ok := watch.ParseSize(v)
			if !ok {
				return c.Errf("max_file_size: invalid value '%s', expected a size from 1K to 4G (a number of bytes, or with K, M or G: KiB, MiB, GiB)", v)
			}
			cfg.MaxFileSize = n
		case "latency_table":
			v, err := oneArg(c, args)
			if err != nil {
				return err
			}
			cfg.LatencyTable, tablePos = rootPath(c, v), pos{c.File(), c.Line()}
		case "data_dir":
			dir, err := parseWritableDir(c, opts, "", key, args)
			if err != nil {
				return err
			}
			cfg.DataDir = dir
		case "api":
			a, err := parseAPI(c, args)
			if err != nil {
				return err
			}
			cfg.API = a
		case "webhook":
			w, err := parseWebhook(c, args)
			if err != nil {
				return err
			}
			cfg.Webhook = w
		case "fleet":
			if len(args) != 0 {
				return c.ArgErr()
			}
			return parseFleet(c, cfg)
		case "route53":
			if err := opts.once(c, "", key); err != nil {
				return err
			}
			return parseRoute53(c, cfg, args)
		case "controls":
			if err := opts.once(c, "", key); err != nil {
				return err
			}
			return parseControls(c, cfg, args)
		case "route53_api":
			if err := opts.once(c, "", key); err != nil {
				return err
			}
			return parseRoute53API(c, cfg, args)
		case "region", "check", "record":
			if key == "check" && len(args) > 0 {
				checkPos[args[0]] = pos{c.File(), c.Line()}
			}
			return parseZoneLine(c, cfg, key, args, &children)
		case "location", "client_location", "az_location":
			return parseAZLine(c, cfg, key, args)
		default:
			return c.Errf("unknown property '%s'", key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c.Next() { // the dispenser holds every healthroute line of the server block
		if c.Val() != pluginName { // a block's '{' must be on the directive's line
			return nil, c.Errf("unexpected '%s', expected '{' at the end of the healthroute line", c.Val())
		}
		return nil, c.Errf("healthroute is given twice in this server block (first at line %d), expected one healthroute block per server block", first)
	}
	if cfg.Route53 != nil {
		if err := loadRoute53(cfg, &children); err != nil {
			return nil, err
		}
	}
	if cfg.R53API != nil {
		if err := loadRoute53API(cfg, &children); err != nil {
			return nil, err
		}
	}
	if err := validate(cfg, children, checkPos); err != nil {
		return nil, err
	}
	cfg.parsing = nil // resolved: what parse left goes, so the running block is plain data
	if cfg.LatencyTable != "" {
		t, err := routing.LoadLatencyTable(cfg.LatencyTable, routing.RegionIDs(&cfg.Config), cfg.fileLimit())
		if err != nil {
			return nil, tablePos.errorf("latency_table: %v", limitHint(err))
		}
		cfg.latency = t
	}
	return cfg, nil
}

// parseZoneLine reads a region, check or record line and what follows it, into cfg;
// calculated checks' children are kept in children, to be resolved after the block.
func parseZoneLine(c *caddy.Controller, cfg *blockConfig, key string, args []string, children *map[*health.Spec][]childRef) error {
	switch key {
	case "region":
		r, err := parseRegion(c, args)
		if err != nil {
			return err
		}
		if _, dup := cfg.Regions[r.Name]; dup {
			return c.Errf("region '%s' is defined twice", r.Name)
		}
		cfg.Regions[r.Name] = r
	case "check":
		spec, kids, err := parseCheck(c, cfg, args)
		if err != nil {
			return err
		}
		if kids != nil {
			if *children == nil {
				*children = map[*health.Spec][]childRef{}
			}
			(*children)[spec] = kids
		}
		cfg.Checks[spec.Name] = spec
	case "record":
		rs, err := parseRecord(c, cfg, args)
		if err != nil {
			return err
		}
		cfg.Records = append(cfg.Records, rs)
	}
	return nil
}

func parseRegion(c *caddy.Controller, args []string) (routing.Region, error) {
	if len(args) != 3 {
		return routing.Region{}, c.ArgErr()
	}
	lat, lon, ok := parseCoords(args[1], args[2])
	if !ok {
		return routing.Region{}, c.Errf("region %s: invalid coordinates '%s %s', expected %s", args[0], args[1], args[2], coordsWant)
	}
	return routing.Region{Name: args[0], Lat: lat, Lon: lon}, nil
}

// coordsWant says what parseCoords accepts, for error messages.
const coordsWant = "LATITUDE (-90..90) LONGITUDE (-180..180) in decimal degrees"

// parseCoords reads a latitude and a longitude in decimal degrees. NaN, infinities
// and values off the globe are refused.
func parseCoords(lat, lon string) (float64, float64, bool) {
	la, err1 := strconv.ParseFloat(lat, 64)
	lo, err2 := strconv.ParseFloat(lon, 64)
	return la, lo, err1 == nil && err2 == nil && view.ValidCoords(la, lo)
}

// childRef is a calculated check's child, by name, with where it was named.
type childRef struct {
	name string
	pos  pos
}

// probed are the check types that send probes of their own.
var probed = []health.Type{health.HTTP, health.HTTPS, health.TCP, health.WebSocket, health.GRPC, health.Prometheus}

// checkOptions lists every check option with the types it applies to; nil: every
// type. Each option is given at most once.
var checkOptions = map[string][]health.Type{
	"interval": probed, "timeout": probed, "failure_threshold": probed, "recovery_threshold": probed,
	"threshold":         {health.Calculated},
	"host":              {health.HTTP, health.HTTPS, health.WebSocket},
	"match":             {health.HTTP, health.HTTPS},
	"status":            {health.HTTP, health.HTTPS},
	"send":              {health.WebSocket},
	"expect":            {health.WebSocket},
	"service":           {health.GRPC},
	"tls":               {health.GRPC},
	"query":             {health.Prometheus},
	"insufficient_data": {health.Prometheus},
	"regions":           probed,
	"checkers":          probed,
	"measure_latency":   {health.HTTP, health.HTTPS, health.TCP, health.WebSocket, health.GRPC},
	"invert":            nil,
	"disabled":          nil,
}

// Duration ranges of check options.
const (
	maxInterval = 24 * time.Hour
	minTimeout  = time.Millisecond
	maxTimeout  = time.Hour
)

// maxCheckExpansion bounds the checks evaluated, counted once per path through
// calculated checks, to judge every check of a block once.
const maxCheckExpansion = 1_000_000
