package healthroute

import (
	"fmt"
	"net/netip"

	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/health/fleet"
	"github.com/healthroute/healthroute/internal/watch"
)

// policy is a record set's routing policy.
type policy uint8

// The routing policies; the names are the Corefile spellings.
const (
	policySimple policy = iota + 1
	policyWeighted
	policyLatency
	policyFailover
	policyGeolocation
	policyGeoproximity
	policyMultivalue
	policyIPBased
	policyAZAffinity
)

var policyNames = [...]string{policySimple: "simple", policyWeighted: "weighted", policyLatency: "latency", policyFailover: "failover",
	policyGeolocation: "geolocation", policyGeoproximity: "geoproximity", policyMultivalue: "multivalue", policyIPBased: "ip",
	policyAZAffinity: "azaffinity"}

// String returns the policy's Corefile spelling.
func (p policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// kind is what a member's target is.
type kind uint8

// Member target kinds.
const (
	kindA kind = iota + 1
	kindAAAA
	kindCNAME
	kindAlias
	kindRR // any other type: Member.Type and Member.RRs
)

var kindNames = [...]string{kindA: "A", kindAAAA: "AAAA", kindCNAME: "CNAME", kindAlias: "alias", kindRR: "RR"}

// String returns the kind as a Corefile target is written ("A", "alias", ...).
func (k kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// maxWeighted is how many members one weighted group may have, as on Route 53.
const maxWeighted = 100

// role is a failover member's role.
type role uint8

// Failover roles.
const (
	rolePrimary role = iota + 1
	roleSecondary
)

// geoScope is the size of a geolocation member's region; smaller wins.
type geoScope uint8

// Geolocation levels, smallest first.
const (
	geoSubdivision geoScope = iota
	geoCountry
	geoContinent
	geoDefault
)

// blockConfig is a parsed and validated healthroute block.
type blockConfig struct {
	Zones        []string
	TTL          uint32
	Fall         fall.F
	Regions      map[string]region
	LatencyTable string                  // path of the latency CSV, "" for none
	latency      *latencyTable           // the table parse loaded, taken by the first Resolver
	API          *apiConfig              // nil: no HTTP API
	Webhook      *webhookConfig          // nil: no status-change notifications
	Checks       map[string]*health.Spec // by name
	Records      []*recordSet            // in Corefile order
	MaxInFlight  int
	MaxFileSize  int64             // size limit of the route53 and latency_table files; 0: watch.DefaultLimit
	Fleet        *fleet.Config     // nil: this instance judges alone
	SOA          soaConfig         // the zones' SOA fields
	NS           []string          // the zones' apex NS names, normalized; nil: no apex NS
	Route53      *route53Config    // nil: no route53 property
	AZ           *azConfig         // location, client_location and az_location lines; nil: none
	Controls     *controlsConfig   // nil: no routing controls
	R53API       *route53APIConfig // nil: no Route 53-compatible API
	DataDir      string            // where each check's last judged state outlives the process; "": nowhere
	controlsDir  string            // the default data directory, from the server's root

	parsing *parseState // what parsing needs beyond the Config; parse drops it
}

// parseState is what parsing a block needs beyond the Config: validate drops it, so a
// running server does not keep it.
type parseState struct {
	checkNames map[*member]string // each member's check as written, for validate to resolve
	pos        map[*member]pos    // where each member was written, for validate's errors
	setPos     map[*recordSet]pos // and each record block
	// One copy of the values that members repeat across names, for members to share:
	// targets (by key, see share), and default set identifiers.
	refs map[string]*ref
	ids  map[string]string
	key  []byte // share's scratch

	soaSet bool // the soa property set the serial and timers
	nsPos  pos  // where ns was given
}

// state returns cfg's parse state, creating it.
func (cfg *blockConfig) state() *parseState {
	if cfg.parsing == nil {
		cfg.parsing = &parseState{checkNames: map[*member]string{}, pos: map[*member]pos{}, setPos: map[*recordSet]pos{},
			refs: map[string]*ref{}, ids: map[string]string{}}
	}
	return cfg.parsing
}

// share returns the one Ref of the addresses or the target name r holds (not other
// types' values, which are named for their record set), keeping r as it for the
// members to come.
func (ps *parseState) share(r ref) *ref {
	k := ps.key[:0]
	if r.Addrs == nil {
		k = append(append(k, 'n'), r.Target...)
	} else {
		k = append(k, 'a')
		for _, a := range r.Addrs {
			b := a.As16()
			k = append(append(k, boolByte(a.Is4())), b[:]...)
		}
	}
	ps.key = k
	if v, ok := ps.refs[string(k)]; ok {
		return v
	}
	v := &r
	ps.refs[string(k)] = v
	return v
}

// soaConfig is the `soa MNAME RNAME [SERIAL REFRESH RETRY EXPIRE MINIMUM]` property,
// with defaults filled in by parse.
type soaConfig struct {
	Mname, Rname                            string // "" for MNAME: the first ns, else the zone
	Serial, Refresh, Retry, Expire, Minimum uint32
}

// apiConfig is the `api ADDRESS [{ token_file FILE; history_dir DIR }]` property.
type apiConfig struct {
	Addr       string // host:port to listen on
	TokenFile  string // bearer token for overrides; "" refuses overrides (403)
	HistoryDir string // where check histories are saved across restarts; "" keeps them in memory only
	at         pos    // the api line, named when the listener cannot start
}

// region is a named place, for latency and geoproximity.
type region struct {
	Name     string
	Lat, Lon float64
}

// recordSet is one `record NAME POLICY { ... }` block: every member, of every type.
type recordSet struct {
	Name    string // normalized, may start with "*."
	Members []*member
	TTL     uint32 // the `ttl` line: the TTL of the non-alias members' answers
	Policy  policy
	HasTTL  bool // a `ttl` line was given; else the block's ttl applies
	API     bool // made through the Route 53-compatible API (route53_api), not the Corefile
}

// member is one line of a record block: the policy key, the target and the options.
// Fields are ordered by size, one-byte fields last, so that the struct packs without
// padding: a large configuration holds one per member.
type member struct {
	Check *health.Spec // nil: no health check (always healthy)
	ID    string       // set identifier

	// Ref is the member's target, never nil once parsed. Members with the same
	// addresses or target name share one: read-only.
	*ref

	// Place holds the keys of the policies that place members (latency,
	// geolocation, geoproximity, ip, azaffinity); nil for the others, whose members then do
	// not carry them. Its fields are read only in a placing policy's code.
	*place

	Type    uint16 // the target's RR type; for an alias the one type it answers, 0 for every type of its target
	Kind    kind   // what the target is
	ETH     bool   // evaluate target health (alias only)
	Weight  uint8  // weighted
	Role    role   // failover
	Default bool   // ip and geolocation: the default member
}

// ref is a member's target: the field its Kind reads.
type ref struct {
	Addrs  []netip.Addr // A and AAAA targets
	Target string       // CNAME or alias target name, normalized
	RRs    []dns.RR     // other types: the values, named for the record set, TTL 0
}

// place is a member's key in a policy that places members.
type place struct {
	Region   string         // latency; geoproximity when it names a region
	GeoCode  string         // geolocation: "EU", "DE", "US-CA" ("" for default)
	CIDRs    []netip.Prefix // ip
	Lat, Lon float64        // geoproximity, truncated to two decimals
	Geo      geoScope       // geolocation
	Coords   bool           // geoproximity: Lat/Lon set (by coordinates or from the region)
	Bias     int8           // geoproximity, -99..99
	AZID     string         // azaffinity: the location's ID ("" for global)
	AZLevel  azLevel        // azaffinity: the location type
}

// ttl is the TTL of rs's non-alias answers: its `ttl` line, else def.
func (rs *recordSet) ttl(def uint32) uint32 {
	if rs.HasTTL {
		return rs.TTL
	}
	return def
}

// typeName is the member's target type as written in a Corefile ("alias" for an
// alias).
func (m *member) typeName() string {
	if m.Kind == kindAlias {
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

// fileLimit returns the size limit of the block's route53 and latency_table files.
func (cfg *blockConfig) fileLimit() int64 {
	if cfg.MaxFileSize > 0 {
		return cfg.MaxFileSize
	}
	return watch.DefaultLimit
}
