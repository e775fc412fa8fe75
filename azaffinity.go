package healthroute

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/coredns/caddy"
)

// AZ-affinity routing (docs/az-affinity.md): members each for a location, from the
// most specific (an Availability Zone ID) to the least (global); a query gets the
// first healthy member for its own location in that order, the most specific one
// when all are unhealthy, and only a global member when its location is unknown.

// AZLevel is an azaffinity member's location type; a smaller one is more specific.
type AZLevel uint8

// Location types, most specific first.
const (
	AZZone      AZLevel = iota + 1 // an Availability Zone, by AZ ID (use1-az1)
	AZZoneGroup                    // a zone group (us-east-1-zg-1)
	AZRegion                       // a region (us-east-1)
	AZPartition                    // a partition (aws)
	AZGlobal                       // every query, its location known or not
)

var azLevelNames = [...]string{AZZone: "az", AZZoneGroup: "zone_group", AZRegion: "region", AZPartition: "partition", AZGlobal: "global"}

// String returns the Corefile spelling of l.
func (l AZLevel) String() string {
	if int(l) < len(azLevelNames) && azLevelNames[l] != "" {
		return azLevelNames[l]
	}
	return fmt.Sprintf("azlevel(%d)", uint8(l))
}

// parseAZLevel reads a location type keyword; global is accepted only with global.
func parseAZLevel(s string, global bool) (AZLevel, bool) {
	for l, n := range azLevelNames {
		if n != "" && n == s && (global || AZLevel(l) != AZGlobal) {
			return AZLevel(l), true
		}
	}
	return 0, false
}

// azChain is a location and every location that contains it: AZ ID, zone group,
// region and partition, by level-1; "" where the location is coarser than the level.
type azChain [4]string

// contains reports whether the location c (a query's) lies in the member location
// (level, id).
func (c *azChain) contains(level AZLevel, id string) bool {
	return level == AZGlobal || (level >= AZZone && level <= AZPartition && c[level-1] == id)
}

// String is the most specific location of c, with its type.
func (c *azChain) String() string {
	for i, id := range c {
		if id != "" {
			return AZLevel(i+1).String() + " " + id
		}
	}
	return "unknown"
}

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
	level AZLevel
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
func parseAZLine(c *caddy.Controller, cfg *Config, key string, args []string) error {
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
func (az *azConfig) chain(level AZLevel, id string) (azChain, error) {
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
	case AZZone:
		code, n, ok := strings.Cut(id, "-az")
		region, known := regionOfCode(code)
		if !ok || !digits(n) || !known {
			return ch, fmt.Errorf("AZ ID '%s' does not name its region (expected such as use1-az1); state it with 'az_location %s ZONE_GROUP REGION PARTITION'", id, id)
		}
		ch = azChain{id, region + "-zg-1", region, partitionOf(region)}
	case AZZoneGroup:
		i := strings.LastIndex(id, "-zg-")
		if i <= 0 || !digits(id[i+4:]) || !isRegion(id[:i]) {
			return ch, fmt.Errorf("zone group '%s' does not name its region (expected REGION-zg-N such as us-east-1-zg-1); state it in an az_location line", id)
		}
		ch[1], ch[2], ch[3] = id, id[:i], partitionOf(id[:i])
	case AZRegion:
		if !isRegion(id) {
			return ch, fmt.Errorf("region '%s' is not a region code (expected such as us-east-1); state it in an az_location line", id)
		}
		ch[2], ch[3] = id, partitionOf(id)
	case AZPartition:
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
					AZLevel(lvl+1), d[lvl], strings.Join(d[lvl+1:], " "), strings.Join(p[lvl+1:], " "), first, az.declPos[first].line)
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
func validateAZ(cfg *Config) error {
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
		if rs.Policy != AZAffinity {
			continue
		}
		for _, m := range rs.Members {
			if m.AZLevel == AZGlobal {
				continue
			}
			if _, err := az.chain(m.AZLevel, m.AZID); err != nil {
				return cfg.parsing.pos[m].errorf("record %s: %s: %v", rs.Name, m.AZLevel, err)
			}
		}
	}
	return nil
}

// parseAZKey reads an azaffinity member key: `az ID`, `zone_group ID`, `region ID`,
// `partition ID` or `global`.
func parseAZKey(c *caddy.Controller, rs *RecordSet, m *Member, a []string) ([]string, error) {
	l, ok := parseAZLevel(a[0], true)
	if !ok {
		return nil, c.Errf("record %s: '%s' is not a member key of azaffinity records, expected %s", rs.Name, a[0], policyKeys[AZAffinity])
	}
	m.AZLevel = l
	if l == AZGlobal {
		return a[1:], nil
	}
	if len(a) < 2 {
		return nil, c.ArgErr()
	}
	m.AZID = strings.ToLower(a[1])
	return a[2:], nil
}

// validateAZGroup refuses two members of one group for one location.
func validateAZGroup(parsed *parseState, rs *RecordSet, t string, group []*Member) error {
	seen := map[azKey]bool{}
	for _, m := range group {
		k := azKey{m.AZLevel, m.AZID}
		if seen[k] {
			return parsed.pos[m].errorf("record %s: location '%s' has a second %s member; azaffinity records have one per location", rs.Name, azKeyString(k), t)
		}
		seen[k] = true
	}
	if !seen[azKey{level: AZGlobal}] {
		log.Warningf("record %s: azaffinity %s group has no global member: queries from unknown locations get no answer", rs.Name, t)
	}
	return nil
}

func azKeyString(k azKey) string {
	if k.level == AZGlobal {
		return "global"
	}
	return k.level.String() + " " + k.id
}

// azPlan is the routing's view of the location lines: the server's location and the
// client prefixes' locations, each with every location containing it.
type azPlan struct {
	server  *azChain            // nil: unknown
	clients *prefixIndex[int32] // client prefix -> index in chains; nil without client_location
	chains  []azChain
	keys    []azKey // by index in chains: the client_location line's location, for explain
}

// newAZPlan returns the plan of cfg's location lines; nil without any.
func newAZPlan(cfg *Config) *azPlan {
	az := cfg.AZ
	if az == nil {
		return nil
	}
	p := &azPlan{}
	if az.server != nil {
		ch, _ := az.chain(az.server.level, az.server.id) // validated
		p.server = &ch
	}
	for _, cl := range az.clients {
		ch, _ := az.chain(cl.key.level, cl.key.id)
		if p.clients == nil {
			p.clients = &prefixIndex[int32]{}
		}
		for _, b := range cl.blocks {
			p.clients.add(b, int32(len(p.chains)))
		}
		p.chains = append(p.chains, ch)
		p.keys = append(p.keys, cl.key)
	}
	return p
}

// azLocation returns q's location: its client prefix's, else the server's; nil when
// unknown. client is the index of the client_location that placed it, -1 for none.
func (r *Resolver) azLocation(q *Query) (loc *azChain, client int32) {
	ap := r.plan.az
	if ap == nil {
		return nil, -1
	}
	if ap.clients != nil {
		if i, ok := ap.clients.lookup(q.Client); ok {
			return &ap.chains[i], i
		}
	}
	return ap.server, -1
}

// azRank is how specifically member mn's location contains loc: 0 for its AZ, up to
// 4 for global; -1 when the member does not apply.
func azRank(mn *mnode, loc *azChain) int {
	m := mn.m
	if m.AZLevel == AZGlobal {
		return int(AZGlobal - AZZone)
	}
	if loc == nil || !loc.contains(m.AZLevel, m.AZID) {
		return -1
	}
	return int(m.AZLevel - AZZone)
}

// pickAZ picks in an azaffinity node for q: the most specific healthy member that
// applies to the query's location; when none is healthy, the most specific one that
// applies; -1 when none applies (NODATA).
func (r *Resolver) pickAZ(t *table, n *node, q *Query) int32 {
	loc, _ := r.azLocation(q)
	best, bestOK := int32(-1), int32(-1)
	key, keyOK := 0, 0
	for i := range n.members {
		k := azRank(&n.members[i], loc)
		if k < 0 {
			continue
		}
		if best < 0 || k < key {
			best, key = int32(i), k
		}
		if (bestOK < 0 || k < keyOK) && r.memberOK(t, n, int32(i), q) {
			bestOK, keyOK = int32(i), k
		}
	}
	if bestOK >= 0 {
		return bestOK
	}
	return best
}

// azHealthy reports whether an azaffinity node has a healthy member that applies to
// q's location.
func (r *Resolver) azHealthy(t *table, n *node, q *Query) bool {
	loc, _ := r.azLocation(q)
	for i := range n.members {
		if azRank(&n.members[i], loc) >= 0 && r.memberOK(t, n, int32(i), q) {
			return true
		}
	}
	return false
}

// azScope is the ECS scope of an azaffinity choice for q: the prefix within which
// every address finds the same client_location (or none, and the server's); 0
// without client_location lines, when every client is at the server's location.
func (r *Resolver) azScope(q *Query) uint8 {
	if ap := r.plan.az; ap != nil && ap.clients != nil {
		return ap.clients.scope(q.Client)
	}
	return 0
}

// azExplain says where q's location came from, for explain.
func (r *Resolver) azExplain(q *Query) string {
	loc, client := r.azLocation(q)
	switch {
	case client >= 0:
		ap := r.plan.az
		return fmt.Sprintf("%s (client_location %s: the client %s is in its prefixes)", loc, azKeyString(ap.keys[client]), q.Client)
	case loc != nil:
		return fmt.Sprintf("%s (the server's location line)", loc)
	}
	return "unknown (no location line and no client_location for the client): only global members apply"
}

// azReason says why a healthy azaffinity member that applies to the query was chosen
// or not.
func azReason(mn *mnode, chosen bool) string {
	where := azKeyString(azKey{mn.m.AZLevel, mn.m.AZID})
	if chosen {
		return "chosen: " + where + " is the most specific healthy location that contains the query's"
	}
	return "healthy, not chosen: a more specific location that contains the query's is healthy"
}
