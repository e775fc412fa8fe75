package healthroute

import (
	"fmt"
	"net/netip"

	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
)

// Policy is a record set's routing policy.
type Policy uint8

// The routing policies; the names are the Corefile spellings.
const (
	Simple Policy = iota + 1
	Weighted
	Latency
	Failover
	Geolocation
	Geoproximity
	Multivalue
	IPBased
)

var policyNames = [...]string{Simple: "simple", Weighted: "weighted", Latency: "latency", Failover: "failover",
	Geolocation: "geolocation", Geoproximity: "geoproximity", Multivalue: "multivalue", IPBased: "ip"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
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

func (k Kind) String() string { return kindNames[k] }

// Role is a failover member's role.
type Role uint8

// Failover roles.
const (
	Primary Role = iota + 1
	Secondary
)

// GeoLevel is the size of a geolocation member's region; smaller wins.
type GeoLevel uint8

// Geolocation levels, smallest first.
const (
	GeoSubdivision GeoLevel = iota
	GeoCountry
	GeoContinent
	GeoDefault
)

// Config is a parsed and validated healthroute block.
type Config struct {
	Zones        []string
	TTL          uint32
	Fall         fall.F
	Regions      map[string]Region
	LatencyTable string                  // path of the latency CSV, "" for none
	API          *APIConfig              // nil: no HTTP API
	Checks       map[string]*health.Spec // by name
	Records      []*RecordSet            // in Corefile order
	MaxInFlight  int
	Fleet        *fleet.Config  // nil: this instance judges alone
	SOA          SOAConfig      // the zones' SOA fields
	NS           []string       // the zones' apex NS names, normalized; nil: no apex NS
	Route53      *route53Config // nil: no route53 property

	members int  // how many members Records hold; Member.idx counts up to it
	soaSet  bool // the soa property set the serial and timers
	nsPos   pos  // where ns was given
}

// SOAConfig is the `soa MNAME RNAME [SERIAL REFRESH RETRY EXPIRE MINIMUM]` property,
// with defaults filled in by parse.
type SOAConfig struct {
	Mname, Rname                            string // "" for MNAME: the first ns, else the zone
	Serial, Refresh, Retry, Expire, Minimum uint32
}

// APIConfig is the `api ADDRESS [{ token_file FILE }]` property.
type APIConfig struct {
	Addr      string // host:port to listen on
	TokenFile string // bearer token for overrides; "" refuses overrides (403)
	at        pos    // the api line, named when the listener cannot start
}

// Region is a named place, for latency and geoproximity.
type Region struct {
	Name     string
	Lat, Lon float64
}

// RecordSet is one `record NAME POLICY { ... }` block: every member, of every type.
type RecordSet struct {
	Name    string // normalized, may start with "*."
	Policy  Policy
	Members []*Member
	TTL     uint32 // the `ttl` line: the TTL of the non-alias members' answers
	HasTTL  bool   // a `ttl` line was given; else the block's ttl applies
	pos     pos
	idx     int // ordinal in Config.Records, for metrics
}

// Member is one line of a record block: the policy key, the target and the options.
type Member struct {
	Kind   Kind
	Type   uint16       // the target's RR type; for an alias the one type it answers, 0 for every type of its target
	Addrs  []netip.Addr // A and AAAA targets
	RRs    []dns.RR     // other types: the values, named for the record set, TTL 0
	Target string       // CNAME or alias target name, normalized
	Check  *health.Spec // nil: no health check (always healthy)
	ETH    bool         // evaluate target health (alias only)
	ID     string       // set identifier

	checkName string // as written; resolved to Check by validate
	idx       int    // ordinal among every member of the Config, for metrics

	Weight uint8  // weighted
	Region string // latency; geoproximity when it names a region
	Role   Role   // failover

	Geo     GeoLevel // geolocation
	GeoCode string   // geolocation: "EU", "DE", "US-CA" ("" for default)

	Coords   bool    // geoproximity: Lat/Lon set (by coordinates or from the region)
	Lat, Lon float64 // geoproximity, truncated to two decimals
	Bias     int     // geoproximity, -99..99

	CIDRs   []netip.Prefix // ip
	Default bool           // ip and geolocation: the default member

	pos pos
}

// ttl is the TTL of rs's non-alias answers: its `ttl` line, else def.
func (rs *RecordSet) ttl(def uint32) uint32 {
	if rs.HasTTL {
		return rs.TTL
	}
	return def
}

// typeName is the member's target type as written in a Corefile ("alias" for an
// alias).
func (m *Member) typeName() string {
	if m.Kind == KindAlias {
		return "alias"
	}
	return dns.TypeToString[m.Type]
}

// pos is a place in a Corefile, for errors found after the block was read.
type pos struct {
	file string
	line int
}

// errorf formats an error the way caddy's Dispenser.Errf does, at p.
func (p pos) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d - Error during parsing: %s", p.file, p.line, fmt.Sprintf(format, args...))
}
