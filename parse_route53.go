package healthroute

import (
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/route53"
)

// route53Config is the `route53 { records FILE; health_checks FILE; cidr_blocks
// [COLLECTION_ID=]FILE }` property: a Route 53 hosted zone's JSON, read at startup
// and on every reload.
type route53Config struct {
	files route53.Files // paths resolved against the server's root
	pos   pos
	stats []watch.Stamp // of files, as parse read them
}

// parseRoute53 reads the route53 property's block.
func parseRoute53(c *caddy.Controller, cfg *blockConfig, args []string) error {
	if len(args) != 0 {
		return c.ArgErr()
	}
	r := &route53Config{pos: pos{c.File(), c.Line()}}
	opts := seen{}
	err := block(c, func(key string, args []string) error {
		v, err := oneArg(c, args)
		if err != nil {
			return err
		}
		switch key {
		case "records", "health_checks":
			if err := opts.once(c, "route53: ", key); err != nil {
				return err
			}
			if key == "records" {
				r.files.Records = rootPath(c, v)
			} else {
				r.files.HealthChecks = rootPath(c, v)
			}
		case "cidr_blocks", "traffic_policy":
			id, file, ok := strings.Cut(v, "=")
			if ok && (id == "" || file == "") {
				return c.Errf("route53: %s: invalid value '%s', expected [ID=]FILE", key, v)
			}
			if ok {
				v = id + "=" + rootPath(c, file)
			} else {
				v = rootPath(c, v)
			}
			if key == "traffic_policy" {
				r.files.TrafficPolicies = append(r.files.TrafficPolicies, v)
			} else {
				r.files.CIDRBlocks = append(r.files.CIDRBlocks, v)
			}
		case "policy_records":
			if err := opts.once(c, "route53: ", key); err != nil {
				return err
			}
			r.files.PolicyRecords = rootPath(c, v)
		default:
			return c.Errf("route53: unknown property '%s', expected records, health_checks, cidr_blocks, traffic_policy or policy_records", key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case r.files.Records == "" && len(r.files.TrafficPolicies) == 0:
		return c.Errf("route53: expected a block with 'records FILE' or 'traffic_policy FILE'")
	case r.files.Records == "" && len(cfg.Zones) != 1:
		return c.Errf("route53: without 'records FILE' the block must have one zone, the policy records' zone; it has %d", len(cfg.Zones))
	}
	cfg.Route53 = r
	return nil
}

// loadRoute53 reads the route53 property's files, converts the hosted zone and parses
// its region, check and record lines into cfg as if the block held them. Any error
// names the file, and the record set or line. The memory of a big load that failed
// is returned to the system at once.
func loadRoute53(cfg *blockConfig, children *map[*health.Spec][]childRef) (err error) {
	r := cfg.Route53
	r.stats = watch.Stamps(r.files.Paths())
	r.files.Limit = cfg.fileLimit()
	defer func() {
		if err != nil {
			watch.Release(r.files.Read)
		}
	}()
	in, err := r.files.Load()
	if err != nil {
		return r.pos.errorf("route53: %v", limitHint(err))
	}
	if len(cfg.Zones) == 1 {
		in.Zone = cfg.Zones[0]
	}
	name := r.files.Records // the file errors and the converted lines are named for
	if name == "" {
		p := r.files.TrafficPolicies[0]
		if _, file, ok := strings.Cut(p, "="); ok {
			p = file
		}
		name = p
	}
	res, err := route53.Convert(in)
	if err != nil {
		return r.pos.errorf("route53: %s: %v", name, err)
	}
	for _, w := range res.Warnings {
		log.Warningf("route53: %s: %s", name, w)
	}
	// The converted lines are read by the Corefile's own parser, named for the file
	// they came from.
	c := &caddy.Controller{Dispenser: caddyfile.NewDispenser(name+" (converted)", strings.NewReader("route53 {\n"+res.Corefile+"}\n"))}
	c.Next()
	return block(c, func(key string, args []string) error {
		if key != "region" && key != "check" && key != "record" {
			return c.Errf("route53: unexpected '%s' in the converted zone", key)
		}
		return parseZoneLine(c, cfg, key, args, children)
	})
}
