package healthroute

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/r53api"
	"github.com/healthroute/healthroute/route53"
)

// route53APIConfig is the `route53_api ADDRESS { access_keys FILE; ... }`
// property: the block's zones are served by a Route 53-compatible API on ADDRESS,
// and the record sets and health checks it manages are added to the block.
type route53APIConfig struct {
	Addr      string
	KeyFile   string
	Limits    r53api.Limits
	at        pos
	gen       uint64            // the API generation the block's records were built from
	corefile  map[string]string // Corefile record names -> "file:line", read-only through the API
	apiChecks map[string]bool   // the checks the API manages, by name (their ID)
	served    []r53api.Zone     // the hosted zones, as startRoute53API made them
	// Hosted: the hosted zones created through the API at or below the block's
	// zones are served here (the hosted_zones property).
	Hosted bool
}

// parseRoute53API reads the route53_api property.
func parseRoute53API(c *caddy.Controller, cfg *blockConfig, args []string) error {
	if len(args) != 1 {
		return c.ArgErr()
	}
	if _, port, err := net.SplitHostPort(args[0]); err != nil || !validPort(port) {
		return c.Errf("route53_api: invalid address '%s', expected HOST:PORT (port 1-65535) such as 127.0.0.1:8054", args[0])
	}
	a := &route53APIConfig{Addr: args[0], Limits: r53api.DefaultLimits, at: pos{c.File(), c.Line()}}
	opts := seen{}
	err := block(c, func(key string, v []string) error {
		if err := opts.once(c, "route53_api: ", key); err != nil {
			return err
		}
		if key == "hosted_zones" {
			if len(v) != 0 {
				return c.Errf("route53_api: hosted_zones takes no value, it has %d", len(v))
			}
			a.Hosted = true
			return nil
		}
		arg, err := oneArg(c, v)
		if err != nil {
			return err
		}
		num := func(lo, hi int) (int, error) {
			return intArg(c, v, lo, hi, "route53_api: "+key, fmt.Sprintf("a number from %d to %d", lo, hi))
		}
		switch key {
		case "access_keys":
			path := rootPath(c, arg)
			if _, err := r53api.ReadKeys(path); err != nil {
				return c.Errf("route53_api: access_keys: %v", err)
			}
			a.KeyFile = path
		case "max_connections":
			a.Limits.MaxConns, err = num(1, 100000)
		case "max_body":
			n, ok := watch.ParseSize(arg)
			if !ok {
				return c.Errf("route53_api: max_body: invalid value '%s', expected a size from 1K to 4G (a number of bytes, or with K, M or G)", arg)
			}
			a.Limits.MaxBody = n
		case "rate":
			var n int
			n, err = num(1, 100000)
			a.Limits.Rate = float64(n)
		case "burst":
			a.Limits.Burst, err = num(1, 100000)
		default:
			return c.Errf("route53_api: unknown property '%s', expected access_keys, hosted_zones, max_connections, max_body, rate or burst", key)
		}
		return err
	})
	if err != nil {
		return err
	}
	if a.KeyFile == "" {
		return c.Errf("route53_api: expected a block with 'access_keys FILE' (ACCESS_KEY_ID SECRET_ACCESS_KEY lines): every request is signed with one of its keys")
	}
	cfg.R53API = a
	return nil
}

// apiState returns the API's part of the replicated state as this process holds
// it: the running node's (the one parse was given), or before it runs the state
// file of the data directory.
func apiState(cfg *blockConfig) (*control.APIState, error) {
	if n := cfg.state().node; n != nil {
		return n.API(), nil
	}
	dir := cfg.controlsDir
	if cfg.Controls != nil {
		dir = cfg.Controls.DataDir
	}
	st, err := control.LoadState(dir)
	if err != nil {
		return nil, err
	}
	return st.API, nil
}

// loadRoute53API adds the record sets and health checks the API manages in the
// block's zones to cfg, converted as the importer converts a hosted zone, and
// marks them API-managed. The names the Corefile defines are noted: the API may
// not change them.
func loadRoute53API(cfg *blockConfig, children *map[*health.Spec][]childRef) error {
	a := cfg.R53API
	a.corefile, a.apiChecks = map[string]string{}, map[string]bool{}
	at := map[string]pos{}
	for _, rs := range cfg.Records {
		p := cfg.state().setPos[rs]
		a.corefile[rs.Name], at[rs.Name] = fmt.Sprintf("%s:%d", p.file, p.line), p
	}
	st, err := apiState(cfg)
	if err != nil {
		return a.at.errorf("route53_api: %v", err)
	}
	if st == nil {
		return nil
	}
	a.gen = st.Gen
	var checks []route53.HealthCheck
	for _, id := range slices.Sorted(maps.Keys(st.HealthChecks)) {
		checks = append(checks, st.HealthChecks[id].HealthCheck)
	}
	for _, zone := range a.loaded(cfg, st) {
		az, records := st.Zones[zone], st.PolicyRecords(zone)
		if az == nil && len(records) == 0 {
			continue
		}
		if az == nil {
			az = &control.APIZone{}
		}
		sets := make([]route53.ResourceRecordSet, 0, len(az.RecordSets))
		for _, k := range slices.Sorted(maps.Keys(az.RecordSets)) {
			rs := az.RecordSets[k].Set()
			if p, dup := at[control.NormalizeName(rs.Name)]; dup {
				return p.errorf("record %s: the name holds API-managed record sets (route53_api): a name is the Corefile's or the API's; remove this block, or delete the record sets through the API", control.NormalizeName(rs.Name))
			}
			sets = append(sets, rs)
		}
		res, err := route53.Convert(route53.Input{Zone: zone, RecordSets: sets, HealthChecks: checks, CIDRBlocks: st.CIDRBlocks(),
			TrafficPolicies: st.TrafficPolicies(), PolicyRecords: records})
		if err != nil {
			// The replicated state converts every zone it accepts (the state machine
			// checks each batch); one that does not is an earlier version's. Refusing
			// the block would leave the member down until raft brought a repair it can
			// only get running, so it answers without those record sets instead.
			log.Errorf("route53_api: the API-managed record sets of %s do not convert (%v): this member answers %s without them until a batch through the API repairs the zone", zone, err, zone)
			continue
		}
		first := len(cfg.Records)
		name := "route53_api " + zone + " (API-managed)"
		c := &caddy.Controller{Dispenser: caddyfile.NewDispenser(name, strings.NewReader("route53_api {\n"+res.Corefile+"}\n"))}
		c.Next()
		err = block(c, func(key string, args []string) error {
			switch {
			case key == "check" && len(args) > 0 && a.apiChecks[args[0]],
				key == "region" && len(args) > 0 && hasRegion(cfg, args[0]):
				for c.NextBlock() { // defined by another zone of the block already: the same definition
				}
				return nil
			case key != "region" && key != "check" && key != "record":
				return c.Errf("route53_api: unexpected '%s' in the converted zone", key)
			case key == "check" && len(args) > 0:
				a.apiChecks[args[0]] = true
			}
			return parseZoneLine(c, cfg, key, args, children)
		})
		if err != nil {
			return a.at.errorf("route53_api: the API-managed record sets of %s: %v", zone, err)
		}
		for _, rs := range cfg.Records[first:] {
			rs.API = true
		}
	}
	return nil
}

// loaded returns the zones whose API-managed record sets the block serves: its
// own, and with hosted_zones those created through the API below them.
func (a *route53APIConfig) loaded(cfg *blockConfig, st *control.APIState) []string {
	out := slices.Clone(cfg.Zones)
	if !a.Hosted {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(st.Hosted)) {
		if !slices.Contains(out, name) && slices.ContainsFunc(cfg.Zones, func(z string) bool { return z == "." || inZone(z, name) }) {
			out = append(out, name)
		}
	}
	return out
}

func hasRegion(cfg *blockConfig, name string) bool { _, ok := cfg.Regions[name]; return ok }

// zones returns the hosted zones the block serves through the API.
func (a *route53APIConfig) zones(cfg *blockConfig) []r53api.Zone {
	var out []r53api.Zone
	var checks []string
	for name := range cfg.Checks {
		if !a.apiChecks[name] {
			checks = append(checks, name)
		}
	}
	for _, z := range cfg.Zones {
		ro := map[string]string{}
		for n, at := range a.corefile {
			if inZone(z, n) {
				ro[n] = at
			}
		}
		out = append(out, r53api.Zone{Name: z, Corefile: ro, Checks: checks, ReadOnly: &r53api.ReadOnly{Sets: corefileSets(cfg, z)}, Delegates: a.Hosted})
	}
	return out
}

// inZone reports whether name (a wildcard's: its parent) is zone or below it.
func inZone(zone, name string) bool {
	name = strings.TrimPrefix(name, "*.")
	return name == zone || strings.HasSuffix(name, "."+zone)
}
