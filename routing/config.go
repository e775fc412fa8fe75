package routing

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
)

// Policy is a record set's routing policy.
type Policy uint8

// The routing policies; the names are the Corefile spellings.
const (
	PolicySimple Policy = iota + 1
	PolicyWeighted
	PolicyLatency
	PolicyFailover
	PolicyGeolocation
	PolicyGeoproximity
	PolicyMultivalue
	PolicyIPBased
	PolicyAZAffinity
)

var PolicyNames = [...]string{PolicySimple: "simple", PolicyWeighted: "weighted", PolicyLatency: "latency", PolicyFailover: "failover",
	PolicyGeolocation: "geolocation", PolicyGeoproximity: "geoproximity", PolicyMultivalue: "multivalue", PolicyIPBased: "ip",
	PolicyAZAffinity: "azaffinity"}

// String returns the policy's Corefile spelling.
func (p Policy) String() string {
	if int(p) < len(PolicyNames) {
		return PolicyNames[p]
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// Kind is what a member's target is.
type Kind uint8

// Member target kinds.
const (
	KindA Kind = iota + 1
	KindAAAA
	KindCNAME
	KindAlias
	KindRR // any other type: Member.Type and Member.RRs
)

var kindNames = [...]string{KindA: "A", KindAAAA: "AAAA", KindCNAME: "CNAME", KindAlias: "alias", KindRR: "RR"}

// String returns the kind as a Corefile target is written ("A", "alias", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MaxWeighted is how many members one weighted group may have, as on Route 53.
const MaxWeighted = 100

// Role is a failover member's role.
type Role uint8

// Failover roles.
const (
	RolePrimary Role = iota + 1
	RoleSecondary
)

// GeoScope is the size of a geolocation member's region; smaller wins.
type GeoScope uint8

// Geolocation levels, smallest first.
const (
	GeoSubdivision GeoScope = iota
	GeoCountry
	GeoContinent
	GeoDefault
)

// Config is what the routing engine reads of a block: its zones, their
// authority and every record set.
type Config struct {
	Zones   []string
	TTL     uint32
	Fall    fall.F
	Regions map[string]Region
	Records []*RecordSet            // in Corefile order
	Checks  map[string]*health.Spec // by name
	SOA     SOAConfig               // the zones' SOA fields
	NS      []string                // the zones' apex NS names, normalized; nil: no apex NS
	AZ      *AZConfig               // location, client_location and az_location lines; nil: none
}

// SOAConfig is the `soa MNAME RNAME [SERIAL REFRESH RETRY EXPIRE MINIMUM]` property,
// with defaults filled in by parse.
type SOAConfig struct {
	Mname, Rname                            string // "" for MNAME: the first ns, else the zone
	Serial, Refresh, Retry, Expire, Minimum uint32
}

// Region is a named place, for latency and geoproximity.
type Region struct {
	Name     string
	Lat, Lon float64
}

// RecordSet is one `record NAME POLICY { ... }` block: every member, of every type.
type RecordSet struct {
	Name    string // normalized, may start with "*."
	Members []*Member
	TTL     uint32 // the `ttl` line: the TTL of the non-alias members' answers
	Policy  Policy
	HasTTL  bool // a `ttl` line was given; else the block's ttl applies
	API     bool // made through the Route 53-compatible API (route53_api), not the Corefile
}

// Member is one line of a record block: the policy key, the target and the options.
// Fields are ordered by size, one-byte fields last, so that the struct packs without
// padding: a large configuration holds one per member.
type Member struct {
	Check *health.Spec // nil: no health check (always healthy)
	ID    string       // set identifier

	// Ref is the member's target, never nil once parsed. Members with the same
	// addresses or target name share one: read-only.
	*Ref

	// Place holds the keys of the policies that place members (latency,
	// geolocation, geoproximity, ip, azaffinity); nil for the others, whose members then do
	// not carry them. Its fields are read only in a placing policy's code.
	*Place

	Type    uint16 // the target's RR type; for an alias the one type it answers, 0 for every type of its target
	Kind    Kind   // what the target is
	ETH     bool   // evaluate target health (alias only)
	Weight  uint8  // weighted
	Role    Role   // failover
	Default bool   // ip and geolocation: the default member
}

// Ref is a member's target: the field its Kind reads.
type Ref struct {
	Addrs  []netip.Addr // A and AAAA targets
	Target string       // CNAME or alias target name, normalized
	RRs    []dns.RR     // other types: the values, named for the record set, TTL 0
}

// Place is a member's key in a policy that places members.
type Place struct {
	Region   string         // latency; geoproximity when it names a region
	GeoCode  string         // geolocation: "EU", "DE", "US-CA" ("" for default)
	CIDRs    []netip.Prefix // ip
	Lat, Lon float64        // geoproximity, truncated to two decimals
	Geo      GeoScope       // geolocation
	Coords   bool           // geoproximity: Lat/Lon set (by coordinates or from the region)
	Bias     int8           // geoproximity, -99..99
	AZID     string         // azaffinity: the location's ID ("" for global)
	AZLevel  AZLevel        // azaffinity: the location type
}

// AnswerTTL is the TTL of rs's non-alias answers: its `ttl` line, else def.
func (rs *RecordSet) AnswerTTL(def uint32) uint32 {
	if rs.HasTTL {
		return rs.TTL
	}
	return def
}

// TypeName is the member's target type as written in a Corefile ("alias" for an
// alias).
func (m *Member) TypeName() string {
	if m.Kind == KindAlias {
		return "alias"
	}
	return dns.TypeToString[m.Type]
}

// RoleName is a failover role as a Corefile writes it.
func RoleName(r Role) string {
	if r == RolePrimary {
		return "primary"
	}
	return "secondary"
}

// Types is a small set of RR types, in the order first added.
type Types []uint16

func (k Types) With(t uint16) Types {
	if k.Has(t) {
		return k
	}
	return append(k, t)
}

func (k Types) Has(t uint16) bool { return slices.Contains(k, t) }

// AliasTypes are the types an alias may name, as Route 53's aliases have them.
var AliasTypes = map[uint16]bool{
	dns.TypeA: true, dns.TypeAAAA: true, dns.TypeCNAME: true, dns.TypeMX: true, dns.TypeTXT: true,
	dns.TypeSPF: true, dns.TypeSRV: true, dns.TypeCAA: true, dns.TypePTR: true, dns.TypeNAPTR: true,
}

// AZConfig is what the block's location lines say.
type AZConfig struct {
	Server   *AZKey             // `location`: the server's own location; nil: unknown
	Clients  []AZClient         // `client_location` lines, in order
	Declared map[string]AZChain // `az_location` lines, by AZ ID
}

// AZKey is a location as written: type and ID.
type AZKey struct {
	Level AZLevel
	ID    string
}

// AZClient is a client_location line: clients in blocks are at key.
type AZClient struct {
	Key    AZKey
	Blocks []netip.Prefix
}

// Chain returns the location (level, id) and every location containing it: from
// the az_location lines, else derived from the names (see docs/az-affinity.md#names).
func (az *AZConfig) Chain(level AZLevel, id string) (AZChain, error) {
	var ch AZChain
	if az != nil {
		for _, d := range az.Declared { // the az_location line that names it, at its level
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
		ch = AZChain{id, region + "-zg-1", region, partitionOf(region)}
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
