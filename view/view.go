// Package view holds the read-only views of healthroute's routing engine: its checks
// with their states, its record groups with their members' health, and the trace of
// one query's resolution. The engine builds them from the snapshot it answers from;
// the operator surface (package operator) renders them. They are plain data: nothing
// in them refers back to the engine, and their JSON encoding is the HTTP API's.
package view

import (
	"net/netip"
	"time"
)

// Check is one health check and its state in the current snapshot.
type Check struct {
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Target      string    `json:"target,omitempty"`
	Children    []string  `json:"children,omitempty"`
	Threshold   int       `json:"threshold,omitempty"`
	Interval    string    `json:"interval,omitempty"`
	Healthy     bool      `json:"healthy"`            // what routing uses now
	Probed      *bool     `json:"probed_healthy"`     // the probes' verdict before invert/disabled (nil: not probed)
	Override    *bool     `json:"override,omitempty"` // an operator's forced status
	Invert      bool      `json:"invert,omitempty"`
	Disabled    bool      `json:"disabled,omitempty"`
	Seen        bool      `json:"seen"` // has a first result
	LastError   string    `json:"last_error,omitempty"`
	LastLatency float64   `json:"last_latency_ms,omitempty"`
	Phases      *Phases   `json:"last_phases,omitempty"` // the last probe's connect, TLS, first byte, total
	LastProbe   time.Time `json:"last_probe,omitzero"`
	LastChange  time.Time `json:"last_change,omitzero"`
	Probes      uint64    `json:"probes"`
	Failures    uint64    `json:"failures"`
	Fleet       *Fleet    `json:"fleet,omitempty"` // with a fleet: every member's report and the quorum
}

// Fleet is a check's quorum arithmetic on this instance
// (docs/routing.md#quorum).
type Fleet struct {
	Healthy  int           `json:"healthy"`        // counted reports that are healthy
	Total    int           `json:"total"`          // counted reports: reachable members, fresh
	Quorum   int           `json:"quorum_percent"` // healthy when 100*healthy > quorum*total
	Kept     bool          `json:"kept"`           // nothing counted: the last status is kept (or, before any verdict, healthy as a new check)
	Decision string        `json:"decision"`       // the decision in words
	Members  []FleetMember `json:"members"`
	Checkers []string      `json:"checkers,omitempty"` // the check's checkers now, when it names them (checkers, regions)
	Error    string        `json:"error,omitempty"`    // why the check has no checker, when it has none
}

// FleetMember is one member's latest report of a check.
type FleetMember struct {
	Member    string    `json:"member"`
	Self      bool      `json:"self,omitempty"`
	Checker   bool      `json:"checker"`           // one of the check's checkers now: only their reports count
	Region    string    `json:"region,omitempty"`  // the member's region
	Address   string    `json:"address,omitempty"` // its gossip address, while reachable
	Error     string    `json:"error,omitempty"`   // the member's last failure reason of the check (at most 120 bytes from other members)
	Reachable bool      `json:"reachable"`
	Counted   bool      `json:"counted"`
	NoVerdict bool      `json:"no_verdict,omitempty"` // its threshold window has not completed since it started or stalled: counted nowhere
	Down      bool      `json:"down"`
	Seq       uint64    `json:"seq"`
	Observed  time.Time `json:"observed,omitzero"`
	Heard     time.Time `json:"heard,omitzero"`
}

// Record is one record group: a record set's members of one type.
type Record struct {
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Policy     string   `json:"policy"`
	Healthy    *bool    `json:"healthy,omitempty"`     // a healthy answer exists (nil: depends on the client)
	LastResort bool     `json:"last_resort"`           // every member unhealthy: failing open
	API        bool     `json:"api_managed,omitempty"` // made through the Route 53-compatible API
	Members    []Member `json:"members"`
}

// Member is one member of a record group.
type Member struct {
	ID      string `json:"id"`
	Key     string `json:"key,omitempty"`
	Target  string `json:"target"`
	Alias   string `json:"alias,omitempty"` // the record set an alias member points to
	ETH     bool   `json:"evaluate_target_health,omitempty"`
	Check   string `json:"check,omitempty"`
	Healthy bool   `json:"healthy"` // as far as it does not depend on the client
}

// Question is a query to explain: the name and type asked, the client's address or
// ECS prefix, and the geoip location to assume for it.
type Question struct {
	Name         string // lower-cased, fully qualified
	Type         uint16
	Client       netip.Prefix
	Country      string // ISO 3166-1 alpha-2, upper case
	Continent    string // two-letter continent code, upper case
	Subdivisions string // ISO 3166-2 subdivision codes, upper case
	Lat, Lon     float64
	HasCoords    bool // Lat and Lon are known
}

// ValidCoords reports whether lat and lon are a place on the globe in decimal degrees:
// latitude within -90..90, longitude within -180..180, neither NaN nor infinite. Every
// coordinate healthroute reads (Corefile, geoip metadata, explain questions) passes it.
func ValidCoords(lat, lon float64) bool {
	return lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180 // false for NaN
}

// Explanation is a query's answer with the decisions that led to it.
type Explanation struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Client string   `json:"client"`
	Rcode  string   `json:"rcode"`
	Answer []string `json:"answer"`
	Scope  uint8    `json:"ecs_scope"`
	Trace  *Trace   `json:"trace"`
}

// Trace says why a query got its answer: each record set the resolver visited, the
// members it considered, and what it did with each. The engine builds it in the same
// walk that answers DNS queries, so an explanation cannot disagree with an answer.
type Trace struct {
	Steps []Step `json:"steps"`
	// NextPlugin: no record of the block answers this name and type, and with
	// fallthrough the next plugin in the server block does (the answer shown is
	// what the block would give without it).
	NextPlugin bool `json:"next_plugin,omitempty"`
}

// Step is one record set visited on the way to the answer.
type Step struct {
	Record          string `json:"record"`
	Type            string `json:"type"`
	Policy          string `json:"policy"`
	ClientDependent bool   `json:"client_dependent"`
	LastResort      bool   `json:"last_resort"` // no member was healthy: fail-open
	NoRecord        bool   `json:"no_record,omitempty"`
	// Scope is the ECS scope this step asks for (the answer's is the largest of any
	// step), ScopeReason why.
	Scope       uint8  `json:"ecs_scope"`
	ScopeReason string `json:"ecs_scope_reason"`
	// Location is the query's location for an azaffinity step, and where it came from.
	Location string      `json:"location,omitempty"`
	API      bool        `json:"api_managed,omitempty"` // the record set was made through the Route 53-compatible API
	Members  []Candidate `json:"members"`
}

// Candidate is one member as the resolver saw it for this query.
type Candidate struct {
	ID      string `json:"id"`
	Target  string `json:"target"`
	Key     string `json:"key,omitempty"` // policy key: weight, region, role, location, blocks
	Check   string `json:"check,omitempty"`
	Healthy bool   `json:"healthy"`
	Chosen  bool   `json:"chosen"`
	Reason  string `json:"reason,omitempty"` // why it was skipped or chosen
}
