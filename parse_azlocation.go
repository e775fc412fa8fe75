package healthroute

import (
	"net/netip"
	"strings"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/routing"
)

// The location lines of a healthroute block, for AZ-affinity routing
// (docs/az-affinity.md#client-location): where the server is, where clients are by
// prefix, and what the names of locations do not say about the ones containing them.

// parseAZLine reads `location TYPE ID`, `client_location TYPE ID PREFIX[,PREFIX...]`
// or `az_location AZ_ID ZONE_GROUP REGION PARTITION` into cfg.
func parseAZLine(c *caddy.Controller, cfg *blockConfig, key string, args []string) error {
	if cfg.AZ == nil {
		cfg.AZ = &routing.AZConfig{Declared: map[string]routing.AZChain{}}
	}
	az, ps := cfg.AZ, cfg.state()
	here := pos{c.File(), c.Line()}
	readKey := func(a []string) (*routing.AZKey, error) {
		l, ok := parseAZLevel(a[0], false)
		if !ok {
			return nil, c.Errf("%s: invalid location type '%s', expected az, zone_group, region or partition", key, a[0])
		}
		k := &routing.AZKey{Level: l, ID: strings.ToLower(a[1])}
		ps.azWhere[k] = here
		return k, nil
	}
	switch key {
	case "location":
		if len(args) != 2 {
			return c.Errf("location: expected 'location TYPE ID' such as 'location az use1-az1'")
		}
		if az.Server != nil {
			return c.Errf("location is given twice (first at line %d), expected it once", ps.azWhere[az.Server].line)
		}
		k, err := readKey(args)
		if err != nil {
			return err
		}
		az.Server = k
	case "client_location":
		if len(args) != 3 {
			return c.Errf("client_location: expected 'client_location TYPE ID PREFIX[,PREFIX...]'")
		}
		k, err := readKey(args)
		if err != nil {
			return err
		}
		cl := routing.AZClient{Key: *k}
		for _, s := range strings.Split(args[2], ",") {
			p, err := netip.ParsePrefix(s)
			if err != nil || p.Addr().Zone() != "" {
				return c.Errf("client_location: invalid prefix '%s', expected ADDRESS/LENGTH", s)
			}
			cl.Blocks = append(cl.Blocks, p.Masked())
		}
		az.Clients = append(az.Clients, cl)
		ps.azClientPos = append(ps.azClientPos, here)
	case "az_location":
		if len(args) != 4 {
			return c.Errf("az_location: expected 'az_location AZ_ID ZONE_GROUP REGION PARTITION'")
		}
		var ch routing.AZChain
		for i, a := range args {
			ch[i] = strings.ToLower(a)
		}
		if _, dup := az.Declared[ch[0]]; dup {
			return c.Errf("az_location: %s is given twice, expected one line per AZ ID", ch[0])
		}
		az.Declared[ch[0]], ps.azDeclPos[ch[0]] = ch, here
	}
	return nil
}

// parseAZLevel reads a location type keyword; global is accepted only with global.
func parseAZLevel(s string, global bool) (routing.AZLevel, bool) {
	for l, n := range routing.AZLevelNames {
		if n != "" && n == s && (global || routing.AZLevel(l) != routing.AZGlobal) {
			return routing.AZLevel(l), true
		}
	}
	return 0, false
}

// parseAZKey reads an azaffinity member key: `az ID`, `zone_group ID`, `region ID`,
// `partition ID` or `global`.
func parseAZKey(c *caddy.Controller, rs *routing.RecordSet, m *routing.Member, a []string) ([]string, error) {
	l, ok := parseAZLevel(a[0], true)
	if !ok {
		return nil, c.Errf("record %s: '%s' is not a member key of azaffinity records, expected %s", rs.Name, a[0], policyKeys[routing.PolicyAZAffinity])
	}
	m.AZLevel = l
	if l == routing.AZGlobal {
		return a[1:], nil
	}
	if len(a) < 2 {
		return nil, c.ArgErr()
	}
	m.AZID = strings.ToLower(a[1])
	return a[2:], nil
}
