package healthroute

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/coredns/caddy"
)

// The location lines of a healthroute block, for AZ-affinity routing
// (docs/az-affinity.md#client-location): where the server is, where clients are by
// prefix, and what the names of locations do not say about the ones containing them.

// parseAZLine reads `location TYPE ID`, `client_location TYPE ID PREFIX[,PREFIX...]`
// or `az_location AZ_ID ZONE_GROUP REGION PARTITION` into cfg.
func parseAZLine(c *caddy.Controller, cfg *blockConfig, key string, args []string) error {
	if cfg.AZ == nil {
		cfg.AZ = &azConfig{declared: map[string]azChain{}}
	}
	az, ps := cfg.AZ, cfg.state()
	here := pos{c.File(), c.Line()}
	readKey := func(a []string) (*azKey, error) {
		l, ok := parseAZLevel(a[0], false)
		if !ok {
			return nil, c.Errf("%s: invalid location type '%s', expected az, zone_group, region or partition", key, a[0])
		}
		k := &azKey{l, strings.ToLower(a[1])}
		ps.azWhere[k] = here
		return k, nil
	}
	switch key {
	case "location":
		if len(args) != 2 {
			return c.Errf("location: expected 'location TYPE ID' such as 'location az use1-az1'")
		}
		if az.server != nil {
			return c.Errf("location is given twice (first at line %d), expected it once", ps.azWhere[az.server].line)
		}
		k, err := readKey(args)
		if err != nil {
			return err
		}
		az.server = k
	case "client_location":
		if len(args) != 3 {
			return c.Errf("client_location: expected 'client_location TYPE ID PREFIX[,PREFIX...]'")
		}
		k, err := readKey(args)
		if err != nil {
			return err
		}
		cl := azClient{key: *k}
		for _, s := range strings.Split(args[2], ",") {
			p, err := netip.ParsePrefix(s)
			if err != nil || p.Addr().Zone() != "" {
				return c.Errf("client_location: invalid prefix '%s', expected ADDRESS/LENGTH", s)
			}
			cl.blocks = append(cl.blocks, p.Masked())
		}
		az.clients = append(az.clients, cl)
		ps.azClientPos = append(ps.azClientPos, here)
	case "az_location":
		if len(args) != 4 {
			return c.Errf("az_location: expected 'az_location AZ_ID ZONE_GROUP REGION PARTITION'")
		}
		var ch azChain
		for i, a := range args {
			ch[i] = strings.ToLower(a)
		}
		if _, dup := az.declared[ch[0]]; dup {
			return c.Errf("az_location: %s is given twice, expected one line per AZ ID", ch[0])
		}
		az.declared[ch[0]], ps.azDeclPos[ch[0]] = ch, here
	}
	return nil
}

// azConsistent refuses az_location lines that place one zone group or region in two
// different containing locations.
func azConsistent(az *azConfig, declPos map[string]pos) error {
	parent := map[string]string{} // zone group or region -> the AZ whose line placed it
	for _, id := range slices.Sorted(maps.Keys(az.declared)) {
		d := az.declared[id]
		for lvl := 1; lvl < 3; lvl++ {
			first, ok := parent[d[lvl]]
			if p := az.declared[first]; ok && !slices.Equal(p[lvl+1:], d[lvl+1:]) {
				return declPos[id].errorf("az_location: %s %s is placed in %s here and in %s by the line of %s (line %d), expected one place",
					azLevel(lvl+1), d[lvl], strings.Join(d[lvl+1:], " "), strings.Join(p[lvl+1:], " "), first, declPos[first].line)
			}
			if !ok {
				parent[d[lvl]] = id
			}
		}
	}
	return nil
}

// validateAZ checks the location lines and the azaffinity members' locations, after
// the whole block was read: each location must be placed in its containing ones.
func validateAZ(cfg *blockConfig) error {
	az := cfg.AZ
	if az != nil {
		if az.server != nil {
			if _, err := az.chain(az.server.level, az.server.id); err != nil {
				return cfg.parsing.azWhere[az.server].errorf("location: %v", err)
			}
		}
		for i := range az.clients {
			k := &az.clients[i].key
			if _, err := az.chain(k.level, k.id); err != nil {
				return cfg.parsing.azClientPos[i].errorf("client_location: %v", err)
			}
		}
		if err := azConsistent(az, cfg.parsing.azDeclPos); err != nil {
			return err
		}
	}
	for _, rs := range cfg.Records {
		if rs.Policy != policyAZAffinity {
			continue
		}
		for _, m := range rs.Members {
			if m.AZLevel == azGlobal {
				continue
			}
			if _, err := az.chain(m.AZLevel, m.AZID); err != nil {
				return cfg.parsing.pos[m].errorf("record %s: %s: %v", rs.Name, m.AZLevel, err)
			}
		}
	}
	return nil
}

// parseAZLevel reads a location type keyword; global is accepted only with global.
func parseAZLevel(s string, global bool) (azLevel, bool) {
	for l, n := range azLevelNames {
		if n != "" && n == s && (global || azLevel(l) != azGlobal) {
			return azLevel(l), true
		}
	}
	return 0, false
}

// parseAZKey reads an azaffinity member key: `az ID`, `zone_group ID`, `region ID`,
// `partition ID` or `global`.
func parseAZKey(c *caddy.Controller, rs *recordSet, m *member, a []string) ([]string, error) {
	l, ok := parseAZLevel(a[0], true)
	if !ok {
		return nil, c.Errf("record %s: '%s' is not a member key of azaffinity records, expected %s", rs.Name, a[0], policyKeys[policyAZAffinity])
	}
	m.AZLevel = l
	if l == azGlobal {
		return a[1:], nil
	}
	if len(a) < 2 {
		return nil, c.ArgErr()
	}
	m.AZID = strings.ToLower(a[1])
	return a[2:], nil
}
