package healthroute

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/coredns/caddy"
)

// The location lines of a healthroute block, for AZ-affinity routing
// (docs/az-affinity.md#client-location): where the server is, where clients are by
// prefix, and what the names of locations do not say about the ones containing them.
// azConfig is what the block's location lines say.
type azConfig struct {
	server   *azKey             // `location`: the server's own location; nil: unknown
	clients  []azClient         // `client_location` lines, in order
	declared map[string]azChain // `az_location` lines, by AZ ID
	declPos  map[string]pos     // and where each was given
	where    map[*azKey]pos     // each key's line, for errors found after the block
}

// azKey is a location as written: type and ID.
type azKey struct {
	level azLevel
	id    string
}

// azClient is a client_location line: clients in blocks are at key.
type azClient struct {
	key    azKey
	blocks []netip.Prefix
	at     pos
}

// parseAZLine reads `location TYPE ID`, `client_location TYPE ID PREFIX[,PREFIX...]`
// or `az_location AZ_ID ZONE_GROUP REGION PARTITION` into cfg.
func parseAZLine(c *caddy.Controller, cfg *blockConfig, key string, args []string) error {
	if cfg.AZ == nil {
		cfg.AZ = &azConfig{declared: map[string]azChain{}, declPos: map[string]pos{}, where: map[*azKey]pos{}}
	}
	az := cfg.AZ
	here := pos{c.File(), c.Line()}
	readKey := func(a []string) (*azKey, error) {
		l, ok := parseAZLevel(a[0], false)
		if !ok {
			return nil, c.Errf("%s: invalid location type '%s', expected az, zone_group, region or partition", key, a[0])
		}
		k := &azKey{l, strings.ToLower(a[1])}
		az.where[k] = here
		return k, nil
	}
	switch key {
	case "location":
		if len(args) != 2 {
			return c.Errf("location: expected 'location TYPE ID' such as 'location az use1-az1'")
		}
		if az.server != nil {
			return c.Errf("location is given twice (first at line %d), expected it once", az.where[az.server].line)
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
		cl := azClient{key: *k, at: here}
		for _, s := range strings.Split(args[2], ",") {
			p, err := netip.ParsePrefix(s)
			if err != nil || p.Addr().Zone() != "" {
				return c.Errf("client_location: invalid prefix '%s', expected ADDRESS/LENGTH", s)
			}
			cl.blocks = append(cl.blocks, p.Masked())
		}
		az.clients = append(az.clients, cl)
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
		az.declared[ch[0]], az.declPos[ch[0]] = ch, here
	}
	return nil
}

// chain returns the location (level, id) and every location containing it: from
// the az_location lines, else derived from the names (see docs/az-affinity.md#names).
func (az *azConfig) chain(level azLevel, id string) (azChain, error) {
	var ch azChain
	if az != nil {
		for _, d := range az.declared { // the az_location line that names it, at its level
			if d[level-1] == id {
				copy(ch[level-1:], d[level-1:])
				return ch, nil
			}
		}
	}
	switch level {
	case azZone:
		code, n, ok := strings.Cut(id, "-az")
		region, known := regionOfCode(code)
		if !ok || !digits(n) || !known {
			return ch, fmt.Errorf("AZ ID '%s' does not name its region (expected such as use1-az1); state it with 'az_location %s ZONE_GROUP REGION PARTITION'", id, id)
		}
		ch = azChain{id, region + "-zg-1", region, partitionOf(region)}
	case azZoneGroup:
		i := strings.LastIndex(id, "-zg-")
		if i <= 0 || !digits(id[i+4:]) || !isRegion(id[:i]) {
			return ch, fmt.Errorf("zone group '%s' does not name its region (expected REGION-zg-N such as us-east-1-zg-1); state it in an az_location line", id)
		}
		ch[1], ch[2], ch[3] = id, id[:i], partitionOf(id[:i])
	case azRegion:
		if !isRegion(id) {
			return ch, fmt.Errorf("region '%s' is not a region code (expected such as us-east-1); state it in an az_location line", id)
		}
		ch[2], ch[3] = id, partitionOf(id)
	case azPartition:
		if id != "aws" && !strings.HasPrefix(id, "aws-") {
			return ch, fmt.Errorf("partition '%s' is not a partition (expected aws or aws-*); state it in an az_location line", id)
		}
		ch[3] = id
	}
	return ch, nil
}

// regionDirections are the direction letters of AZ IDs' region codes (use1: us-east-1).
var regionDirections = map[string]string{"e": "east", "w": "west", "n": "north", "s": "south", "c": "central",
	"ne": "northeast", "nw": "northwest", "se": "southeast", "sw": "southwest"}

// regionAreas are the area prefixes of region codes; usg is GovCloud.
var regionAreas = map[string]string{"us": "us", "usg": "us-gov", "eu": "eu", "ap": "ap", "ca": "ca", "sa": "sa",
	"me": "me", "af": "af", "il": "il", "mx": "mx", "cn": "cn"}

// regionOfCode turns an AZ ID's region code into the region: use1 is us-east-1,
// apne1 ap-northeast-1, usgw1 us-gov-west-1.
func regionOfCode(code string) (string, bool) {
	i := len(code)
	for i > 0 && code[i-1] >= '0' && code[i-1] <= '9' {
		i--
	}
	num, letters := code[i:], code[:i]
	if num == "" {
		return "", false
	}
	for _, n := range []int{3, 2} { // usg before us
		if len(letters) <= n {
			continue
		}
		area, ok := regionAreas[letters[:n]]
		dir, ok2 := regionDirections[letters[n:]]
		if ok && ok2 {
			return area + "-" + dir + "-" + num, true
		}
	}
	return "", false
}

// isRegion reports whether s looks like a region code: letters, dashes, then -N.
func isRegion(s string) bool {
	i := strings.LastIndexByte(s, '-')
	if i <= 2 || !digits(s[i+1:]) {
		return false
	}
	for _, r := range s[:i] {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}

// partitionOf is the partition of a region, by its name.
func partitionOf(region string) string {
	for _, p := range [...][2]string{{"cn-", "aws-cn"}, {"us-gov-", "aws-us-gov"}, {"us-isob-", "aws-iso-b"},
		{"us-isof-", "aws-iso-f"}, {"eu-isoe-", "aws-iso-e"}, {"us-iso-", "aws-iso"}, {"eusc-", "aws-eusc"}} {
		if strings.HasPrefix(region, p[0]) {
			return p[1]
		}
	}
	return "aws"
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// consistent refuses az_location lines that place one zone group or region in two
// different containing locations.
func (az *azConfig) consistent() error {
	parent := map[string]string{} // zone group or region -> the AZ whose line placed it
	for _, id := range slices.Sorted(maps.Keys(az.declared)) {
		d := az.declared[id]
		for lvl := 1; lvl < 3; lvl++ {
			first, ok := parent[d[lvl]]
			if p := az.declared[first]; ok && !slices.Equal(p[lvl+1:], d[lvl+1:]) {
				return az.declPos[id].errorf("az_location: %s %s is placed in %s here and in %s by the line of %s (line %d), expected one place",
					azLevel(lvl+1), d[lvl], strings.Join(d[lvl+1:], " "), strings.Join(p[lvl+1:], " "), first, az.declPos[first].line)
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
				return az.where[az.server].errorf("location: %v", err)
			}
		}
		for i := range az.clients {
			k := &az.clients[i].key
			if _, err := az.chain(k.level, k.id); err != nil {
				return az.clients[i].at.errorf("client_location: %v", err)
			}
		}
		if err := az.consistent(); err != nil {
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
